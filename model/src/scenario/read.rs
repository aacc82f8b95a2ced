//! Reading one key of one table of the TOML parse tree, which keeps every key's and
//! value's byte span (`toml::Spanned`): the key's line for its error, unknown keys in
//! file order, missing keys, values of the wrong type, and the words some keys take.

use locklab::{DesignId, Fencing, RenewalOnError};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::parse::{Parser, Result};
use super::{
    Arrival, Expectation, ExpectedCauses, Faults, KeyErrorKind, Promotion, Property, ScenarioError,
};
use crate::cause::Ingredient;

pub(super) type Entry<'i> = Spanned<DeValue<'i>>;

/// One table of the file: the root (name `""`) or a `[section]`.
pub(super) struct Section<'a, 'i> {
    pub(super) name: &'static str,
    /// `None` when the file has no such table.
    pub(super) table: Option<&'a DeTable<'i>>,
    /// Line of the table's header (1 for the root or an absent table).
    pub(super) line: usize,
    pub(super) valid: &'static [&'static str],
}

/// The designs that renew, for messages.
const RENEWING: &str = "watchdog, reentrant, get-expire-renewal, custom with a renew step";

/// A design that does not renew, as a message names it.
fn not_renewing(design: DesignId) -> String {
    if design == DesignId::Custom {
        "a custom lock without a renew step".into()
    } else {
        format!("design `{design}`")
    }
}

impl<'a, 'i> Section<'a, 'i> {
    pub(super) fn get(&self, key: &str) -> Option<&'a Entry<'i>> {
        self.table.and_then(|t| t.get(key))
    }

    pub(super) fn dotted(&self, key: &str) -> String {
        if self.name.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.name)
        }
    }
}

/// A value with the line it was written on (or where it would have been).
#[derive(Clone, Debug)]
pub(super) struct Field<T> {
    pub(super) value: T,
    pub(super) line: usize,
}

impl Parser<'_> {
    /// A sub-table of the root; absent is fine (its keys get defaults or are reported missing).
    pub(super) fn section<'a, 'i>(
        &self,
        root: &Section<'a, 'i>,
        name: &'static str,
        valid: &'static [&'static str],
    ) -> Result<Section<'a, 'i>> {
        match root.get(name) {
            None => Ok(Section {
                name,
                table: None,
                line: 1,
                valid,
            }),
            Some(entry) => match entry.get_ref() {
                DeValue::Table(table) => Ok(Section {
                    name,
                    table: Some(table),
                    line: self.line(&entry.span()),
                    valid,
                }),
                other => Err(self.err(
                    self.line(&entry.span()),
                    name.to_string(),
                    KeyErrorKind::WrongType,
                    format!("expected a table ([{name}]), found {}", a_type(other)),
                )),
            },
        }
    }

    /// The first (in file order) key of `section` that it does not know.
    pub(super) fn check_unknown(&self, section: &Section<'_, '_>) -> Result<()> {
        let Some(table) = section.table else {
            return Ok(());
        };
        let unknown = table
            .iter()
            .filter(|(key, _)| !section.valid.contains(&&**key.get_ref()))
            .min_by_key(|(key, _)| key.span().start);
        match unknown {
            None => Ok(()),
            Some((key, _)) => {
                let place = if section.name.is_empty() {
                    "valid top-level keys".to_string()
                } else {
                    format!("valid keys in [{}]", section.name)
                };
                Err(self.err(
                    self.line(&key.span()),
                    section.dotted(key.get_ref()),
                    KeyErrorKind::Unknown,
                    format!("unknown key; {place}: {}", section.valid.join(", ")),
                ))
            }
        }
    }

    pub(super) fn required<T>(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        field: Option<Field<T>>,
    ) -> Result<Field<T>> {
        field.ok_or_else(|| {
            let mut message = match (section.name, section.table) {
                ("", _) => "required key is missing".to_string(),
                (name, Some(_)) => format!("required key is missing from [{name}]"),
                (name, None) => format!("required key is missing (the file has no [{name}] table)"),
            };
            if section.name == "expect" {
                message.push_str("; state \"holds\" or \"violated\" for every property");
            }
            self.err(
                section.line,
                section.dotted(key),
                KeyErrorKind::Missing,
                message,
            )
        })
    }

    pub(super) fn wrong_type(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        entry: &Entry<'_>,
        expected: &str,
    ) -> ScenarioError {
        let value = entry.get_ref();
        let mut message = format!("expected {expected}, found {}", a_type(value));
        if let DeValue::String(s) = value {
            message.push_str(&format!(" (\"{s}\")"));
            if expected == "an integer" && s.trim().parse::<i64>().is_ok() {
                message.push_str(&format!("; write {key} = {} without quotes", s.trim()));
            }
        }
        self.err(
            self.line(&entry.span()),
            section.dotted(key),
            KeyErrorKind::WrongType,
            message,
        )
    }

    pub(super) fn string(
        &self,
        section: &Section<'_, '_>,
        key: &str,
    ) -> Result<Option<Field<String>>> {
        let Some(entry) = section.get(key) else {
            return Ok(None);
        };
        match entry.get_ref() {
            DeValue::String(s) => Ok(Some(Field {
                value: s.to_string(),
                line: self.line(&entry.span()),
            })),
            _ => Err(self.wrong_type(section, key, entry, "a string")),
        }
    }

    pub(super) fn fencing(&self, root: &Section<'_, '_>) -> Result<Fencing> {
        let Some(entry) = root.get("fencing") else {
            return Ok(Fencing::Off);
        };
        match entry.get_ref() {
            DeValue::Boolean(true) => Ok(Fencing::All),
            DeValue::Boolean(false) => Ok(Fencing::Off),
            DeValue::String(s) => match s.as_ref() {
                "all" => Ok(Fencing::All),
                "writes" => Ok(Fencing::Writes),
                "off" => Ok(Fencing::Off),
                other => Err(self.err(
                    self.line(&entry.span()),
                    "fencing".into(),
                    KeyErrorKind::InvalidValue,
                    format!("`{other}` is not a fencing mode; use true, false, \"all\", \"writes\" or \"off\""),
                )),
            },
            _ => Err(self.wrong_type(root, "fencing", entry, "a boolean or a string (\"all\", \"writes\", \"off\")")),
        }
    }

    /// `reduction`, which earlier versions read, is refused with the reason: its one
    /// reduction, `"receive_first"`, was not sound, and the search needs no opt-in now.
    pub(super) fn no_reduction(&self, root: &Section<'_, '_>) -> Result<()> {
        let Some(entry) = root.get("reduction") else {
            return Ok(());
        };
        Err(self.err(
            self.line(&entry.span()),
            "reduction".into(),
            KeyErrorKind::Unknown,
            "`reduction` is no longer read: the search takes the answers a Redlock fan-out \
             only records in one order by itself, keeping every verdict (README, \
             \"Reductions\"); \"receive_first\" was not sound. Delete the line"
                .to_string(),
        ))
    }

    /// `watchdog`: on unless set to `false`; only for designs that renew (`renews`: a
    /// built-in design that renews, or a custom lock with a renewal step).
    pub(super) fn watchdog(
        &self,
        root: &Section<'_, '_>,
        design: DesignId,
        renews: bool,
    ) -> Result<bool> {
        let Some(entry) = root.get("watchdog") else {
            return Ok(true);
        };
        let DeValue::Boolean(on) = *entry.get_ref() else {
            return Err(self.wrong_type(root, "watchdog", entry, "a boolean"));
        };
        if !renews {
            return Err(self.err(
                self.line(&entry.span()),
                "watchdog".into(),
                KeyErrorKind::InvalidValue,
                format!(
                    "{} has no watchdog; watchdog = {on} applies only to designs that renew \
                     ({RENEWING})",
                    not_renewing(design)
                ),
            ));
        }
        Ok(on)
    }

    /// `renewal_on_error`: `"stop"` (default) or `"retry"`; only for designs that renew.
    pub(super) fn renewal_on_error(
        &self,
        root: &Section<'_, '_>,
        design: DesignId,
        renews: bool,
    ) -> Result<RenewalOnError> {
        let Some(field) = self.string(root, "renewal_on_error")? else {
            return Ok(RenewalOnError::Stop);
        };
        let bad = |message: String| {
            self.err(
                field.line,
                "renewal_on_error".into(),
                KeyErrorKind::InvalidValue,
                message,
            )
        };
        if !renews {
            return Err(bad(format!(
                "{} does not renew its lease; renewal_on_error applies only to designs that \
                 renew ({RENEWING})",
                not_renewing(design)
            )));
        }
        match field.value.as_str() {
            "stop" => Ok(RenewalOnError::Stop),
            "retry" => Ok(RenewalOnError::Retry),
            other => Err(bad(format!(
                "`{other}` is not a renewal rule; use \"stop\" or \"retry\""
            ))),
        }
    }

    /// `topology.promotion`, if given.
    pub(super) fn promotion(&self, topology: &Section<'_, '_>) -> Result<Option<Field<Promotion>>> {
        let Some(entry) = topology.get("promotion") else {
            return Ok(None);
        };
        let line = self.line(&entry.span());
        let value = match entry.get_ref() {
            DeValue::String(s) => match s.as_ref() {
                "any" => Promotion::Any,
                "most-advanced" => Promotion::MostAdvanced,
                other => {
                    return Err(self.err(
                        line,
                        topology.dotted("promotion"),
                        KeyErrorKind::InvalidValue,
                        format!(
                            "`{other}` is not a promotion rule; use \"any\" or \"most-advanced\""
                        ),
                    ))
                }
            },
            _ => {
                return Err(self.wrong_type(
                    topology,
                    "promotion",
                    entry,
                    "a string (\"any\" or \"most-advanced\")",
                ))
            }
        };
        Ok(Some(Field { value, line }))
    }

    /// `clients.arrival` (default `"start"`).
    pub(super) fn arrival(&self, clients: &Section<'_, '_>) -> Result<Arrival> {
        Ok(match self.string(clients, "arrival")? {
            None => Arrival::Start,
            Some(f) => match f.value.as_str() {
                "start" => Arrival::Start,
                "any" => Arrival::Any,
                other => {
                    return Err(self.err(
                        f.line,
                        clients.dotted("arrival"),
                        KeyErrorKind::InvalidValue,
                        format!("`{other}` is not an arrival; use \"start\" or \"any\""),
                    ))
                }
            },
        })
    }

    pub(super) fn expectation(&self, section: &Section<'_, '_>, key: &str) -> Result<Expectation> {
        let Some(entry) = section.get(key) else {
            return self
                .required(section, key, None::<Field<Expectation>>)
                .map(|f| f.value);
        };
        match entry.get_ref() {
            DeValue::String(s) => s.parse().map_err(|message: String| {
                self.err(
                    self.line(&entry.span()),
                    section.dotted(key),
                    KeyErrorKind::InvalidValue,
                    message,
                )
            }),
            _ => Err(self.wrong_type(section, key, entry, "a string (\"holds\" or \"violated\")")),
        }
    }
}

impl Parser<'_> {
    /// `expect.cause`, if given: what each violation the scenario expects needs. A list
    /// (`["pauses"]`) states it for every property expected violated; a table
    /// (`{ no_orphaned_lock = ["crashes"], owner_only_release = ["step_delays"] }`) per
    /// property, each of them listed. Each cause is a `[faults]` key whose budget is
    /// above zero, `node_drift` where `timing.node_drift` (`drift`) is, or
    /// `step_delays`, at most once.
    pub(super) fn cause(
        &self,
        expect: &Section<'_, '_>,
        faults: &Faults,
        drift: u32,
        violated: &[Property],
    ) -> Result<Option<ExpectedCauses>> {
        let Some(entry) = expect.get("cause") else {
            return Ok(None);
        };
        let key = expect.dotted("cause");
        let line = self.line(&entry.span());
        let bad = |key: &str, message: String| {
            self.err(line, key.to_string(), KeyErrorKind::InvalidValue, message)
        };
        if violated.is_empty() {
            return Err(bad(
                &key,
                "a cause says what a violation needs, but every property is expected to \
                 hold; remove cause"
                    .to_string(),
            ));
        }
        let causes = match entry.get_ref() {
            DeValue::Array(_) => {
                let list = self.ingredients(&key, entry, faults, drift, line)?;
                violated.iter().map(|p| (*p, list.clone())).collect()
            }
            DeValue::Table(table) => {
                let mut causes = Vec::new();
                for (name, value) in table.iter() {
                    let dotted = format!("{key}.{}", name.get_ref());
                    let property: Property = name
                        .get_ref()
                        .parse()
                        .map_err(|e: String| bad(&dotted, e))?;
                    if !violated.contains(&property) {
                        return Err(bad(
                            &dotted,
                            format!("{property} is expected to hold: it has no cause to state"),
                        ));
                    }
                    causes.push((
                        property,
                        self.ingredients(&dotted, value, faults, drift, line)?,
                    ));
                }
                if let Some(p) = violated
                    .iter()
                    .find(|p| !causes.iter().any(|(q, _)| q == *p))
                {
                    return Err(bad(
                        &key,
                        format!("{p} is expected violated: state its cause too"),
                    ));
                }
                causes.sort();
                causes
            }
            _ => {
                return Err(self.wrong_type(
                    expect,
                    "cause",
                    entry,
                    "an array of causes or a table of them per property",
                ))
            }
        };
        Ok(Some(ExpectedCauses(causes)))
    }

    /// One list of causes (`key` and `line` for its errors).
    fn ingredients(
        &self,
        key: &str,
        entry: &Entry<'_>,
        faults: &Faults,
        drift: u32,
        line: usize,
    ) -> Result<Vec<Ingredient>> {
        let bad =
            |kind: KeyErrorKind, message: String| self.err(line, key.to_string(), kind, message);
        let wrong = || {
            bad(
                KeyErrorKind::WrongType,
                format!(
                    "expected an array of strings, found {}",
                    a_type(entry.get_ref())
                ),
            )
        };
        let DeValue::Array(items) = entry.get_ref() else {
            return Err(wrong());
        };
        let mut list = Vec::new();
        for item in items {
            let DeValue::String(name) = item.get_ref() else {
                return Err(wrong());
            };
            let invalid = |message: String| bad(KeyErrorKind::InvalidValue, message);
            let ingredient: Ingredient = name.parse().map_err(invalid)?;
            if list.contains(&ingredient) {
                return Err(invalid(format!("`{name}` is listed twice")));
            }
            if let Ingredient::Fault(kind) = ingredient {
                if kind.budget(faults) == 0 {
                    return Err(invalid(format!(
                        "`{name}` cannot be needed: the scenario has faults.{name} = 0"
                    )));
                }
            }
            if ingredient == Ingredient::NodeDrift && drift == 0 {
                return Err(invalid(format!(
                    "`{name}` cannot be needed: the scenario has timing.node_drift = 0"
                )));
            }
            list.push(ingredient);
        }
        list.sort();
        Ok(list)
    }
}

/// "a string", "an integer", ...
fn a_type(value: &DeValue<'_>) -> String {
    let name = value.type_str();
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}
