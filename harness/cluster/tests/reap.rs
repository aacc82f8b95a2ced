//! Nothing left behind: a process killed with SIGKILL cannot remove its
//! containers; the next cluster start (and `locklab_cluster::reap`, which
//! `locklab clean` runs) removes them, and nothing else. Real Docker.
//!
//! No libtest harness: the test runs this binary again as the child that is
//! killed (`LOCKLAB_REAP_CHILD=1`), which holds a cluster until it dies.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use locklab_cluster::{remaining_resources, Cluster, Owner, MANAGED_LABEL, OWNER_START_LABEL};

const CHILD_ENV: &str = "LOCKLAB_REAP_CHILD";

fn main() {
    if std::env::var_os(CHILD_ENV).is_some() {
        hold_a_cluster_until_killed();
    } else {
        sigkilled_runs_are_reaped_and_nothing_else();
        println!("test sigkilled_runs_are_reaped_and_nothing_else ... ok");
    }
}

/// The child: starts a cluster with a replica (so with a network), says its
/// id, and waits to be killed.
fn hold_a_cluster_until_killed() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cluster = rt
        .block_on(Cluster::builder().masters(1).replicas(1).start())
        .unwrap_or_else(|e| panic!("child: cluster start failed: {e}"));
    println!("CLUSTER {}", cluster.id());
    loop {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .output()
        .expect("run the docker CLI");
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn exists(container: &str) -> bool {
    Command::new("docker")
        .args(["container", "inspect", "--format", "{{.Id}}", container])
        .output()
        .expect("run the docker CLI")
        .status
        .success()
}

/// Starts a container of the Redis image with these labels (none: a
/// bystander that no locklab process created).
fn run_container(name: &str, labels: &[(String, String)]) {
    let image = locklab_cluster::image().unwrap().to_string();
    let mut args = vec!["run".to_string(), "-d".into(), "--name".into(), name.into()];
    for (k, v) in labels {
        args.extend(["--label".to_string(), format!("{k}={v}")]);
    }
    args.push(image);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    docker(&args);
}

/// Removes what the test made, also when it fails.
struct Cleanup {
    containers: Vec<String>,
    children: Vec<Child>,
    cluster_ids: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for name in &self.containers {
            let _ = Command::new("docker").args(["rm", "-f", name]).output();
        }
        for id in &self.cluster_ids {
            if let Ok((containers, networks)) = remaining_resources(id) {
                for c in containers {
                    let _ = Command::new("docker").args(["rm", "-f", &c]).output();
                }
                for n in networks {
                    let _ = Command::new("docker").args(["network", "rm", &n]).output();
                }
            }
        }
    }
}

fn sigkilled_runs_are_reaped_and_nothing_else() {
    if let Err(e) = locklab_cluster::preflight() {
        panic!("cannot run the container tests: {e}");
    }
    let tag = std::process::id();
    let mut cleanup = Cleanup {
        containers: Vec::new(),
        children: Vec::new(),
        cluster_ids: Vec::new(),
    };

    // A run that holds a cluster (two containers, a network), killed with SIGKILL.
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the child");
    let stdout = child.stdout.take().unwrap();
    cleanup.children.push(child);
    let line = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("CLUSTER "))
        .expect("the child names its cluster");
    let killed_id = line["CLUSTER ".len()..].to_string();
    cleanup.cluster_ids.push(killed_id.clone());
    let (containers, networks) = remaining_resources(&killed_id).unwrap();
    assert_eq!(
        (containers.len(), networks.len()),
        (2, 1),
        "the child's cluster"
    );
    // SIGKILL: no destructor runs. Not waited for until the end: a zombie is gone too.
    cleanup.children[0].kill().unwrap();
    let (containers, networks) = remaining_resources(&killed_id).unwrap();
    assert_eq!(
        (containers.len(), networks.len()),
        (2, 1),
        "SIGKILL leaves the containers and the network behind"
    );

    // A bystander: a container no locklab process made.
    let bystander = format!("locklab-reap-test-{tag}-bystander");
    cleanup.containers.push(bystander.clone());
    run_container(&bystander, &[]);

    // A container owned by a live process (not this one).
    let sleeper = Command::new("sleep").arg("600").spawn().unwrap();
    let sleeper_owner = Owner::of_process(sleeper.id()).expect("the sleeper's /proc entry");
    cleanup.children.push(sleeper);
    let live = format!("locklab-reap-test-{tag}-live-owner");
    cleanup.containers.push(live.clone());
    run_container(
        &live,
        &sleeper_owner.labels().into_iter().collect::<Vec<_>>(),
    );

    // A container whose owner's pid now belongs to another process (this one):
    // the start time tells them apart.
    let mut reused = Owner::current().unwrap().labels();
    let start: u64 = reused[OWNER_START_LABEL].parse().unwrap();
    reused.insert(OWNER_START_LABEL.to_string(), (start + 1).to_string());
    let reused_pid = format!("locklab-reap-test-{tag}-reused-pid");
    cleanup.containers.push(reused_pid.clone());
    run_container(&reused_pid, &reused.into_iter().collect::<Vec<_>>());

    // The next cluster start removes the killed run's containers and network...
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cluster = rt.block_on(Cluster::builder().start()).unwrap();
    cleanup.cluster_ids.push(cluster.id().to_string());
    let (containers, networks) = remaining_resources(&killed_id).unwrap();
    assert!(
        containers.is_empty() && networks.is_empty(),
        "left behind by the killed run: {containers:?} {networks:?}"
    );
    assert!(!exists(&reused_pid), "a reused pid is not the owner");
    // ...and nothing else: the bystander, the live process's container, and
    // the cluster of this (live) process stay.
    assert!(exists(&bystander), "the bystander was removed");
    assert!(exists(&live), "a live process's container was removed");
    let (containers, _) = remaining_resources(cluster.id()).unwrap();
    assert_eq!(containers.len(), 1, "this process's cluster");
    let labels = docker(&[
        "container",
        "inspect",
        "--format",
        &format!("{{{{index .Config.Labels \"{MANAGED_LABEL}\"}}}}"),
        &containers[0],
    ]);
    assert_eq!(labels, "true", "the cluster's containers carry the marker");

    // `reap` (`locklab clean`) does the same on demand and says what it removed.
    let mut gone = Owner::current().unwrap().labels();
    gone.insert(OWNER_START_LABEL.to_string(), (start + 2).to_string());
    let on_demand = format!("locklab-reap-test-{tag}-on-demand");
    cleanup.containers.push(on_demand.clone());
    run_container(&on_demand, &gone.into_iter().collect::<Vec<_>>());
    let reaped = locklab_cluster::reap().unwrap();
    assert!(
        reaped.containers.iter().any(|(name, _)| *name == on_demand),
        "{reaped:?}"
    );
    assert!(reaped.to_string().contains(&on_demand), "{reaped}");
    assert!(!exists(&on_demand));
    assert!(exists(&bystander) && exists(&live));

    drop(cluster);
    drop(rt);
    drop(cleanup);
    assert!(!exists(&bystander) && !exists(&live));
}
