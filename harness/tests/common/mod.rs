//! Helpers shared by the `locklab` binary's tests: small scenario files calibrated
//! against the model, temporary directories, running the binary, and reading XML.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use locklab_model::model::LockModel;
use locklab_model::scenario::{Expectation, Property, Scenario};
use locklab_model::search::{search, SearchOptions};
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_locklab");

/// A slow holder on the correct single-node lock: client1 reads, the ttl runs out
/// during ordinary step delays, client2 acquires: mutual exclusion is violated.
pub fn slow_holder_body(name: &str) -> String {
    format!(
        r#"name = "{name}"
design = "lua-release"
summary = "a slow holder outlives its lease"
fencing = false

[topology]
masters = 1
replicas = 0

[clients]
count = 2

[timing]
ttl = 3
work = 1
max_step_delay = 1
horizon = 8

[faults]
pauses = 0
crashes = 0
"#
    )
}

/// naive-setnx whose holder may crash: the lock has no expiry and stays forever.
pub fn naive_crash_body(name: &str) -> String {
    format!(
        r#"name = "{name}"
design = "naive-setnx"

[clients]
count = 2

[timing]
ttl = 3
work = 1
max_step_delay = 1
horizon = 6

[faults]
crashes = 1
"#
    )
}

/// A scenario with its `[expect]` table.
pub fn with_expect(body: &str, expect: impl Fn(Property) -> Expectation) -> String {
    let mut text = format!("{body}\n[expect]\n");
    for p in Property::ALL {
        text.push_str(&format!("{p} = \"{}\"\n", expect(p)));
    }
    text
}

/// A scenario whose expectations are what the model finds (run here, in-process), so
/// that these tests do not depend on the model's tuning; and the violated properties.
pub struct Calibrated {
    pub text: String,
    pub violated: Vec<Property>,
}

impl Calibrated {
    pub fn new(name: &str, body: &str) -> Self {
        let probe = with_expect(body, |_| Expectation::Holds);
        let scenario = Scenario::parse(&probe, format!("{name}.toml")).unwrap();
        let result = search(
            &LockModel::new(&scenario),
            &SearchOptions::default(),
            |_| {},
        );
        assert!(result.purchased, "{name}: vacuous");
        let violated: Vec<Property> = Property::ALL
            .into_iter()
            .filter(|&p| result.counterexample(p).is_some())
            .collect();
        assert!(!violated.is_empty(), "{name}: nothing violated");
        let text = with_expect(body, |p| expectation(violated.contains(&p)));
        Calibrated { text, violated }
    }

    /// The same scenario expecting the opposite for `property`.
    pub fn flipped(&self, body: &str, property: Property) -> String {
        with_expect(body, |p| {
            expectation(self.violated.contains(&p) != (p == property))
        })
    }
}

pub fn expectation(violated: bool) -> Expectation {
    if violated {
        Expectation::Violated
    } else {
        Expectation::Holds
    }
}

pub fn slow_holder(name: &str) -> Calibrated {
    let c = Calibrated::new(name, &slow_holder_body(name));
    assert!(c.violated.contains(&Property::MutualExclusion));
    c
}

pub fn naive_crash(name: &str) -> Calibrated {
    let c = Calibrated::new(name, &naive_crash_body(name));
    assert!(c.violated.contains(&Property::NoOrphanedLock));
    c
}

/// A fresh directory for one test, removed when the test passes.
pub struct TempDir(pub PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

pub fn temp_dir(test: &str) -> TempDir {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "locklab-cli-{}-{}-{test}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    fs::write(&path, text).unwrap();
    path
}

/// Runs `locklab` in `dir` (so the default `reports/` lands there).
pub fn locklab(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run locklab")
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exit code")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

pub fn check_json(dir: &Path, args: &[&str]) -> (Output, Value) {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "out.json", "--threads", "1"]);
    let out = locklab(dir, &all);
    let json = fs::read_to_string(dir.join("out.json"))
        .unwrap_or_else(|e| panic!("no out.json ({e}); stderr: {}", stderr(&out)));
    (out, serde_json::from_str(&json).unwrap())
}

/// The report with its wall times blanked.
pub fn timeless_json(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "seconds" || k == "first_counterexample_seconds" {
                    *x = Value::Null;
                } else {
                    timeless_json(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(timeless_json),
        _ => {}
    }
}

pub fn property<'a>(json: &'a Value, scenario: usize, property: &str) -> &'a Value {
    &json["scenarios"][scenario]["properties"][property]
}

/// An XML element as a conforming parser (quick-xml) reads it.
#[derive(Debug, Default)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    /// The element's own text, entities resolved.
    pub text: String,
    pub children: Vec<Element>,
}

impl Element {
    pub fn attr(&self, key: &str) -> &str {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("<{}> lacks {key}", self.name))
    }

    /// The children named `name`.
    pub fn children(&self, name: &str) -> Vec<&Element> {
        self.children.iter().filter(|c| c.name == name).collect()
    }

    /// Every descendant named `name`, in document order.
    pub fn all(&self, name: &str) -> Vec<&Element> {
        let mut out = Vec::new();
        for c in &self.children {
            if c.name == name {
                out.push(c);
            }
            out.extend(c.all(name));
        }
        out
    }
}

/// Parses a whole document with quick-xml, panicking on anything that is not
/// well-formed: mismatched or unclosed tags, duplicate attributes, unknown entities,
/// text or a second element outside the root.
pub fn parse_xml(xml: &str) -> Element {
    use quick_xml::escape::resolve_predefined_entity;
    use quick_xml::events::{BytesStart, Event};
    use quick_xml::Reader;

    fn element(e: &BytesStart) -> Element {
        let name = e.name().as_ref().to_string();
        let attrs = e
            .attributes()
            .map(|a| {
                let a = a.unwrap_or_else(|err| panic!("<{name}>: bad attribute: {err}"));
                let key = a.key.as_ref().to_string();
                let value = a
                    .normalized_value(quick_xml::XmlVersion::Explicit1_0)
                    .unwrap_or_else(|err| panic!("<{name} {key}>: {err}"))
                    .into_owned();
                (key, value)
            })
            .collect();
        Element {
            name,
            attrs,
            ..Default::default()
        }
    }

    let mut reader = Reader::from_str(xml);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let event = reader
            .read_event()
            .unwrap_or_else(|e| panic!("not well-formed at {}: {e}", reader.error_position()));
        match event {
            Event::Decl(_) | Event::Comment(_) | Event::DocType(_) | Event::PI(_) => {}
            Event::Start(e) => {
                assert!(root.is_none(), "a second root element");
                stack.push(element(&e));
            }
            Event::Empty(e) => {
                assert!(root.is_none(), "a second root element");
                let el = element(&e);
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::End(_) => {
                let el = stack.pop().expect("an end tag without a start");
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => {
                let text = t.xml10_content();
                match stack.last_mut() {
                    Some(el) => el.text.push_str(&text),
                    None => assert!(text.trim().is_empty(), "text outside the root: {text:?}"),
                }
            }
            Event::CData(c) => {
                let el = stack.last_mut().expect("CDATA outside the root");
                el.text.push_str(&c);
            }
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref().expect("a valid character reference") {
                    Some(c) => c.to_string(),
                    None => resolve_predefined_entity(&r)
                        .unwrap_or_else(|| panic!("unknown entity &{};", &*r))
                        .to_string(),
                };
                let el = stack.last_mut().expect("an entity outside the root");
                el.text.push_str(&resolved);
            }
            Event::Eof => break,
        }
    }
    assert!(stack.is_empty(), "unclosed elements");
    root.expect("a root element")
}
