//! A scenario read back from the JSON it serializes to (a trace embeds it).
//!
//! The JSON has the keys of the file, plus `path`. It goes through the file's own
//! parser, so an embedded scenario is refused by the same checks, with the same
//! message naming the key, as the file it came from; there is one set of rules, not a
//! second one for JSON.

use std::path::PathBuf;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use super::{Scenario, ScenarioError};

impl<'de> Deserialize<'de> for Scenario {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Scenario, D::Error> {
        let mut table = toml::Table::deserialize(deserializer)?;
        // `path` names the file rather than being a key of it: it is what `parse` is
        // given, and the name is checked against its stem as for a file.
        let path = match table.remove("path") {
            Some(toml::Value::String(path)) => PathBuf::from(path),
            Some(other) => {
                return Err(D::Error::custom(format_args!(
                    "key `path`: must be a string (got {})",
                    other.type_str()
                )))
            }
            None => {
                let name = table.get("name").and_then(toml::Value::as_str);
                PathBuf::from(format!("{}.toml", name.unwrap_or_default()))
            }
        };
        let text = toml::to_string(&table).map_err(D::Error::custom)?;
        Scenario::parse(&text, &path).map_err(|e| D::Error::custom(without_place(&e)))
    }
}

/// The error without the file and line: they would point into the TOML text made from
/// the JSON, which nobody sees. The key still names the field.
fn without_place(e: &ScenarioError) -> String {
    match e {
        ScenarioError::Key { key, message, .. } => format!("key `{key}`: {message}"),
        ScenarioError::Syntax { message, .. } => message.clone(),
        ScenarioError::Io { .. } | ScenarioError::NoScenarios { .. } => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value as Json};

    use super::*;
    use crate::scenario::Property;

    const CRASH: &str = r#"name = "crash"
design = "set-px-del"
summary = "a holder crashes"

[clients]
count = 2

[timing]
ttl = 3
work = 1
max_step_delay = 1
horizon = 8

[faults]
crashes = 1

[expect]
mutual_exclusion = "holds"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "holds"
"#;

    fn crash() -> Scenario {
        Scenario::parse(CRASH, "scenarios/crash.toml").unwrap()
    }

    fn read(json: Json) -> Result<Scenario, String> {
        serde_json::from_value(json).map_err(|e| e.to_string())
    }

    #[test]
    fn the_json_reads_back_as_the_same_scenario_path_included() {
        let json = serde_json::to_value(crash()).unwrap();
        assert_eq!(json["path"], "scenarios/crash.toml");
        assert_eq!(read(json.clone()), Ok(crash()));

        // Without `path`, the scenario is named after itself, as a file in the cwd.
        let mut bare = json;
        bare.as_object_mut().unwrap().remove("path");
        let back = read(bare).unwrap();
        assert_eq!(back.path, PathBuf::from("crash.toml"));
        assert_eq!(
            Scenario {
                path: crash().path,
                ..back
            },
            crash()
        );
    }

    #[test]
    fn a_bad_field_is_refused_naming_it() {
        let json = serde_json::to_value(crash()).unwrap();
        let with = |pointer: &str, value: Json| {
            let mut j = json.clone();
            *j.pointer_mut(pointer).unwrap() = value;
            read(j).unwrap_err()
        };
        assert_eq!(
            with("/timing/ttl", json!(0)),
            "key `timing.ttl`: must be at least 1 (got 0)"
        );
        assert!(
            with("/design", json!("sexnx")).starts_with("key `design`: "),
            "{}",
            with("/design", json!("sexnx"))
        );
        assert!(with("/clients/count", json!("two")).starts_with("key `clients.count`: "));
        assert!(with("/name", json!("other")).starts_with("key `name`: must equal the file name"));
        assert_eq!(
            with("/path", json!(3)),
            "key `path`: must be a string (got integer)"
        );

        let mut unknown = json.clone();
        unknown["faults"]["meteors"] = json!(1);
        assert!(read(unknown)
            .unwrap_err()
            .starts_with("key `faults.meteors`: "));

        let mut missing = json;
        missing["expect"]
            .as_object_mut()
            .unwrap()
            .remove("resource_safety");
        assert!(read(missing)
            .unwrap_err()
            .starts_with("key `expect.resource_safety`: "));
    }

    #[test]
    fn properties_read_back_by_their_names() {
        for p in Property::ALL {
            let json = serde_json::to_value(p).unwrap();
            assert_eq!(json, p.as_str());
            assert_eq!(serde_json::from_value::<Property>(json).unwrap(), p);
        }
        assert!(serde_json::from_value::<Property>(json!("liveness")).is_err());
    }
}
