//! `locklab explore`: the stateright Explorer serves a scenario on 127.0.0.1 with
//! actions and states written for people.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

use common::*;

/// Stops the Explorer when the test ends, passing or failing.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

#[test]
fn the_explorer_shows_human_readable_actions_and_states() {
    let dir = temp_dir("explore");
    let scenario = write(&dir, "slow", &slow_holder("slow").text);
    // A port that was free a moment ago.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(BIN)
        .args(["explore", scenario.to_str().unwrap(), "--port"])
        .arg(port.to_string())
        .current_dir(Path::new(&*dir))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start locklab explore");
    let mut server = Server(child);
    // Wait for the server to listen (bounded: about a minute on a loaded machine).
    let mut body = None;
    for _ in 0..600 {
        if let Some(b) = get(port, "/.states/0") {
            body = Some(b);
            break;
        }
        assert!(
            server.0.try_wait().unwrap().is_none(),
            "locklab explore exited early"
        );
        sleep(Duration::from_millis(100));
    }
    let body = body.expect("the Explorer answers on 127.0.0.1");
    let steps: serde_json::Value = serde_json::from_str(&body).unwrap();
    let steps = steps.as_array().expect("a list of next steps");
    let actions: Vec<&str> = steps.iter().filter_map(|s| s["action"].as_str()).collect();
    assert!(actions.contains(&"client1 acquire"), "{actions:?}");
    assert!(actions.contains(&"tick"), "{actions:?}");
    let acquire = steps
        .iter()
        .find(|s| s["action"] == "client1 acquire")
        .unwrap();
    let state = acquire["state"].as_str().unwrap();
    assert!(state.contains("client1: acquiring"), "{state}");
    assert!(state.contains("node1: lock key -"), "{state}");
    assert!(
        state.contains("in flight: client1 -> master1 (node1): SET lock t1 NX PX 3"),
        "{state}"
    );
    assert!(!state.contains("Client {"), "not a Debug dump: {state}");
    // The path so far is drawn as a sequence diagram.
    let svg = acquire["svg"].as_str().expect("an SVG of the path");
    assert!(svg.contains("acquire: SET lock t1 NX PX 3"), "{svg}");
    assert_eq!(parse_xml(svg).name, "svg");
    // The page itself is served too.
    assert!(get(port, "/").is_some_and(|page| page.contains("<html")));
    drop(server);
}

#[test]
fn a_busy_port_is_bad_input() {
    let dir = temp_dir("explore-busy");
    let scenario = write(&dir, "slow", &slow_holder("slow").text);
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let out = locklab(
        &dir,
        &["explore", scenario.to_str().unwrap(), "--port", &port],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("choose another --port"),
        "{}",
        stderr(&out)
    );
}
