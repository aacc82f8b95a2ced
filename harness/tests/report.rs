//! `locklab report`: the committed gallery is exactly what the command produces, pages
//! are self-contained, and a replay file shows up beside its counterexample.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use locklab_model::scenario::Property;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// Files under `dir` by relative path, leaving out what `report` does not own:
/// `replays/` (written by `locklab replay`), `bench*` files (the benchmarks),
/// `chaos.md` and `soak/` (figures and timelines of `locklab soak` runs), `libraries.md`
/// (the lock libraries' soaks, `adapters/libraries_table.py`), `screenshots/` (the
/// gallery as a browser showed it, taken by hand).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if rel == "replays"
                || rel.starts_with("bench")
                || rel == "chaos.md"
                || rel == "libraries.md"
                || rel == "soak"
                || rel == "screenshots"
            {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).unwrap();
        }
    }
}

#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn regenerating_the_committed_reports_changes_nothing() {
    let root = workspace();
    let committed = root.join("reports");
    let out = temp_dir("regenerate");
    // The pages show the recorded replays and soak timelines: give the new run the
    // same ones.
    for recorded in ["replays", "soak"] {
        if committed.join(recorded).is_dir() {
            copy_dir(&committed.join(recorded), &out.join(recorded));
        }
    }
    let run = locklab(&root, &["report", "--reports", out.to_str().unwrap()]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let (old, new) = (files(&committed), files(&out));
    let hint = "regenerate with: cargo run --release -p locklab-harness -- report";
    for path in old.keys() {
        assert!(
            new.contains_key(path),
            "{path} is committed but no longer generated; {hint}"
        );
    }
    for (path, bytes) in &new {
        let old = old
            .get(path)
            .unwrap_or_else(|| panic!("{path} is generated but not committed; {hint}"));
        assert!(
            old == bytes,
            "reports/{path} differs from what report writes; {hint}"
        );
    }
    assert!(new.contains_key("index.html") && new.contains_key("index.md"));
}

/// A replay as `locklab replay` writes it, made by hand.
const REPLAY: &str = r#"{
  "scenario": "slow",
  "property": "mutual_exclusion",
  "trace": "reports/traces/slow.mutual_exclusion.json",
  "tick_ms": 100,
  "reproduced": true,
  "model_violations": ["mutual_exclusion"],
  "real_violations": ["mutual_exclusion"],
  "emulations": ["step delay: sleep of one tick"],
  "timeline": [
    {"ms": 0.25, "actor": "client1", "event": "SET lock t1 NX PX 300", "reply": "OK"},
    {"ms": 312.5, "actor": "client2", "event": "SET lock t2 NX PX 300", "reply": "OK"},
    {"ms": 330.0, "actor": "client2", "event": "enter critical section", "reply": null}
  ]
}
"#;

/// The `<svg>...</svg>` elements of an HTML page.
fn inline_svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("a closed svg") + start + "</svg>".len();
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}

fn assert_self_contained(page: &str, name: &str) {
    for banned in [
        "<script", "<link", " src=", "@import", "url(http", "<iframe",
    ] {
        assert!(!page.contains(banned), "{name} contains {banned}");
    }
    let urls = page.matches("http").count();
    let namespaces = page.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(
        urls, namespaces,
        "{name}: only the SVG namespace may look like a URL"
    );
}

#[test]
fn pages_are_self_contained_and_show_a_replay_beside_its_counterexample() {
    let dir = temp_dir("report");
    let c = slow_holder("slow");
    write(&dir, "slow", &c.text);
    write(&dir, "crash", &naive_crash("crash").text);
    let replays = dir.join("out/replays");
    fs::create_dir_all(&replays).unwrap();
    fs::write(replays.join("slow.mutual_exclusion.json"), REPLAY).unwrap();
    let run = locklab(
        &dir,
        &["report", "slow.toml", "crash.toml", "--reports", "out"],
    );
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let out = dir.join("out");

    // The index: one matrix row per scenario, symbols as well as classes.
    let index = fs::read_to_string(out.join("index.html")).unwrap();
    assert_self_contained(&index, "index.html");
    assert!(index.contains("href=\"scenarios/slow.html\""));
    assert!(index.contains("class=\"violated\""));
    assert!(index.contains("✖ violated in "));
    assert!(index.contains("✔ holds (as expected)"));
    let md = fs::read_to_string(out.join("index.md")).unwrap();
    assert!(
        md.contains(
            "| `lua-release` | [slow](scenarios/slow.md)<br>a slow holder outlives its lease |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| `naive-setnx` | [crash](scenarios/crash.md) |"),
        "{md}"
    );

    // The slow page: diagram, replay timeline, fix.
    let page = fs::read_to_string(out.join("scenarios/slow.html")).unwrap();
    assert_self_contained(&page, "slow.html");
    assert!(
        page.contains("a slow holder outlives its lease"),
        "the summary"
    );
    assert!(
        page.contains("seed: “經典:Redis分布式鎖的正確實現方式” (A classic: the correct way to implement a Redis distributed lock)"),
        "the seed pattern"
    );
    // Each diagram comes with its step column drawn alone, kept in view as it scrolls.
    let (gutters, svgs): (Vec<_>, Vec<_>) = inline_svgs(&page)
        .into_iter()
        .partition(|svg| svg.contains("class=\"gutter\""));
    assert_eq!(
        svgs.len(),
        c.violated.len(),
        "one diagram per violated property"
    );
    assert_eq!(gutters.len(), svgs.len(), "one step column per diagram");
    for svg in &svgs {
        let root = parse_xml(svg);
        assert_eq!(root.name, "svg");
        let texts: Vec<&str> = root.all("text").iter().map(|t| t.text.as_str()).collect();
        assert!(
            texts.contains(&"client1") && texts.contains(&"node1"),
            "{texts:?}"
        );
    }
    assert!(page.contains("Replay on real Redis"));
    assert!(
        page.contains("<td>312.5</td><td>client2</td><td><code>SET lock t2 NX PX 300</code></td>")
    );
    assert!(page.contains("step delay: sleep of one tick"));
    assert!(page.contains("The fix:"));
    // Only the property with a replay file shows one.
    assert_eq!(page.matches("Replay on real Redis").count(), 1);

    let md = fs::read_to_string(out.join("scenarios/slow.md")).unwrap();
    assert!(
        md.contains("| 312.5 | client2 | `SET lock t2 NX PX 300` | `OK` |"),
        "{md}"
    );
    assert!(
        md.contains("| 330.0 | client2 | `enter critical section` |  |"),
        "{md}"
    );
    for p in &c.violated {
        let svg_file = format!("slow.{p}.svg");
        assert!(
            md.contains(&format!("]({svg_file})")),
            "{svg_file} referenced"
        );
        let svg = fs::read_to_string(out.join("scenarios").join(&svg_file)).unwrap();
        assert_eq!(parse_xml(&svg).name, "svg");
        // The same drawing inline in the HTML.
        assert!(page.contains(svg.trim_end()), "{svg_file} is inlined");
        assert!(out.join(format!("traces/slow.{p}.json")).exists());
    }
    assert!(c.violated.contains(&Property::MutualExclusion));

    // A page without counterexamples for a property that holds says so in its table.
    let crash = fs::read_to_string(out.join("scenarios/crash.md")).unwrap();
    assert!(
        crash.contains("| `mutual_exclusion` | holds | ✔ holds (as expected) |"),
        "{crash}"
    );

    // A broken replay file is bad input naming the file.
    fs::write(
        replays.join("slow.mutual_exclusion.json"),
        "{\"scenario\": 3}",
    )
    .unwrap();
    let run = locklab(&dir, &["report", "slow.toml", "--reports", "out"]);
    assert_eq!(code(&run), 2);
    assert!(
        stderr(&run).contains("slow.mutual_exclusion.json"),
        "{}",
        stderr(&run)
    );
}

/// Every committed trace tells its story through `explain TRACE.json` from the
/// repository root, as the gallery's pages and the README suggest: its steps apply to
/// the scenario it embeds (a key left out of that scenario would read back as another
/// scenario), and the story ends at the property the trace breaks.
#[test]
fn every_gallery_trace_is_explained() {
    let root = workspace();
    let mut traces: Vec<PathBuf> = fs::read_dir(root.join("reports/traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    traces.sort();
    assert!(traces.len() > 10, "{traces:?}");
    for path in traces {
        let relative = path.strip_prefix(&root).unwrap().to_str().unwrap();
        let out = locklab(&root, &["explain", relative]);
        assert_eq!(code(&out), 0, "{relative}: {}", stderr(&out));
        let name = path.file_stem().unwrap().to_str().unwrap();
        let (scenario, property) = name.rsplit_once('.').unwrap();
        let story = stdout(&out);
        assert!(
            story.starts_with(&format!("{scenario} violates {property} in ")),
            "{relative}: {story}"
        );
        assert!(story.contains("The violation needs"), "{relative}: {story}");
    }
}
