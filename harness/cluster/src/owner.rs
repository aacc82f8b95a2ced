//! Who owns a container, and the removal of what dead owners left behind.
//!
//! Every container and network the cluster creates carries [`MANAGED_LABEL`]
//! and the identity of the process that created it: its pid, its start time
//! (field 22 of `/proc/<pid>/stat`, clock ticks since boot, so that a pid
//! reused by a later process is not taken for the owner), the machine's boot
//! id and the process's pid namespace (pids mean something only within both),
//! and the host name. A process killed with SIGKILL cannot remove its
//! containers; [`reap`] (run by every [`crate::ClusterBuilder::start`] and by
//! `locklab clean`) removes those whose owner no longer exists. It never
//! touches a container without the labels (another program's), nor one whose
//! owner runs, nor one whose owner it cannot judge (another pid namespace,
//! another machine).

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use crate::engine;
use crate::error::ClusterError;

/// `true` on every container and network created by this crate.
pub const MANAGED_LABEL: &str = "org.locklab.managed";
/// The owner's pid.
pub const OWNER_PID_LABEL: &str = "org.locklab.owner.pid";
/// The owner's start time: clock ticks after boot (`/proc/<pid>/stat`, field 22).
pub const OWNER_START_LABEL: &str = "org.locklab.owner.start";
/// The boot id of the owner's machine (`/proc/sys/kernel/random/boot_id`).
pub const OWNER_BOOT_LABEL: &str = "org.locklab.owner.boot";
/// The owner's pid namespace (`readlink /proc/<pid>/ns/pid`).
pub const OWNER_PIDNS_LABEL: &str = "org.locklab.owner.pidns";
/// The owner's host name.
pub const OWNER_HOST_LABEL: &str = "org.locklab.owner.host";

/// A process, as the labels name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Start time in clock ticks after boot.
    pub start: u64,
    pub boot: String,
    pub pidns: String,
    pub host: String,
}

impl Owner {
    /// This process (read once); `None` where `/proc` cannot tell (not Linux):
    /// containers then carry no owner and are never reaped.
    pub fn current() -> Option<Owner> {
        static CURRENT: OnceLock<Option<Owner>> = OnceLock::new();
        CURRENT
            .get_or_init(|| Owner::of_process(std::process::id()))
            .clone()
    }

    /// The process `pid` of this machine, if it exists.
    pub fn of_process(pid: u32) -> Option<Owner> {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        Some(Owner {
            pid,
            start: start_time(pid)?,
            boot: read("/proc/sys/kernel/random/boot_id")?.trim().to_string(),
            pidns: std::fs::read_link(format!("/proc/{pid}/ns/pid"))
                .ok()?
                .to_string_lossy()
                .into_owned(),
            host: read("/proc/sys/kernel/hostname")?.trim().to_string(),
        })
    }

    /// The labels that name this owner, with [`MANAGED_LABEL`].
    pub fn labels(&self) -> HashMap<String, String> {
        HashMap::from([
            (MANAGED_LABEL.to_string(), "true".to_string()),
            (OWNER_PID_LABEL.to_string(), self.pid.to_string()),
            (OWNER_START_LABEL.to_string(), self.start.to_string()),
            (OWNER_BOOT_LABEL.to_string(), self.boot.clone()),
            (OWNER_PIDNS_LABEL.to_string(), self.pidns.clone()),
            (OWNER_HOST_LABEL.to_string(), self.host.clone()),
        ])
    }

    /// The owner named by a container's or network's labels.
    pub fn from_labels(labels: &HashMap<String, String>) -> Option<Owner> {
        if labels.get(MANAGED_LABEL).map(String::as_str) != Some("true") {
            return None;
        }
        Some(Owner {
            pid: labels.get(OWNER_PID_LABEL)?.parse().ok()?,
            start: labels.get(OWNER_START_LABEL)?.parse().ok()?,
            boot: labels.get(OWNER_BOOT_LABEL)?.clone(),
            pidns: labels.get(OWNER_PIDNS_LABEL)?.clone(),
            host: labels.get(OWNER_HOST_LABEL)?.clone(),
        })
    }

    /// Whether this owner is known to be gone, judged from `here` (this
    /// process): on the same boot and pid namespace, when no process with its
    /// pid and start time exists; on the same host, after a reboot. Anything
    /// else (another namespace, another machine) is not known to be gone.
    pub fn is_gone(&self, here: &Owner) -> bool {
        if self.boot == here.boot && self.pidns == here.pidns {
            start_time(self.pid) != Some(self.start)
        } else {
            self.boot != here.boot && self.host == here.host
        }
    }
}

/// Field 22 of `/proc/<pid>/stat` (after the parenthesised command name,
/// which may hold spaces); `None` when the process does not exist or is dead
/// (a zombie: killed, not yet waited for).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

fn parse_start_time(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // fields 3.. follow the name: the state is field 3, the start time field 22
    let mut fields = rest.split_whitespace();
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(22 - 4)?.parse().ok()
}

/// What [`reap`] (or [`remove_own`]) removed: names of containers and networks,
/// with the pid of their owner, and what it could not remove.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reaped {
    pub containers: Vec<(String, u32)>,
    pub networks: Vec<(String, u32)>,
    pub failures: Vec<String>,
}

impl fmt::Display for Reaped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, pid) in &self.containers {
            writeln!(f, "removed container {name} (owner pid {pid} is gone)")?;
        }
        for (name, pid) in &self.networks {
            writeln!(f, "removed network {name} (owner pid {pid} is gone)")?;
        }
        for failure in &self.failures {
            writeln!(f, "could not remove {failure}")?;
        }
        if self.containers.is_empty() && self.networks.is_empty() && self.failures.is_empty() {
            writeln!(
                f,
                "nothing to remove: no container or network of a gone locklab process"
            )?;
        }
        Ok(())
    }
}

/// Removes the containers, then the networks, of locklab processes that no
/// longer exist (see the module docs); blocking. `locklab clean` runs it.
pub fn reap() -> Result<Reaped, ClusterError> {
    engine::block_on(reap_gone_owners())
}

/// Removes the containers, then the networks, that this very process created;
/// blocking. For an interrupted command (SIGINT, SIGTERM), which exits without
/// dropping its clusters: it removes what they would have removed.
pub fn remove_own() -> Result<Reaped, ClusterError> {
    let Some(here) = Owner::current() else {
        return Ok(Reaped::default());
    };
    engine::block_on(remove_owned(|owner| *owner == here))
}

/// [`reap`] in async code.
pub(crate) async fn reap_gone_owners() -> Result<Reaped, ClusterError> {
    let Some(here) = Owner::current() else {
        return Ok(Reaped::default());
    };
    remove_owned(|owner| owner.is_gone(&here)).await
}

/// Removes the managed containers, then networks, whose owner `chosen` picks.
async fn remove_owned(chosen: impl Fn(&Owner) -> bool) -> Result<Reaped, ClusterError> {
    let mut reaped = Reaped::default();
    let engine = engine::engine().await?;
    let managed = [format!("{MANAGED_LABEL}=true")];
    let gone = |labels: Option<&HashMap<String, String>>| {
        labels.and_then(Owner::from_labels).filter(|o| chosen(o))
    };
    for c in engine.containers_with_labels(&managed).await? {
        let (Some(owner), Some(id)) = (gone(c.labels.as_ref()), c.id) else {
            continue;
        };
        let name = c
            .names
            .and_then(|n| n.first().map(|n| n.trim_start_matches('/').to_string()))
            .unwrap_or(id.clone());
        match engine.container_remove(&id).await {
            Ok(()) => reaped.containers.push((name, owner.pid)),
            Err(e) => reaped.failures.push(format!("container {name}: {e}")),
        }
    }
    for n in engine.networks_with_labels(&managed).await? {
        let (Some(owner), Some(name)) = (gone(n.labels.as_ref()), n.name) else {
            continue;
        };
        // an endpoint can take a moment to go after its container
        let mut result = engine.network_remove(&name).await;
        for _ in 0..10 {
            if result.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            result = engine.network_remove(&name).await;
        }
        match result {
            Ok(()) => reaped.networks.push((name, owner.pid)),
            Err(e) => reaped.failures.push(format!("network {name}: {e}")),
        }
    }
    Ok(reaped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_start_time_after_the_command_name() {
        let stat =
            "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_time(stat), Some(987654));
        assert_eq!(parse_start_time("4242 (x) S 1"), None);
        let zombie = stat.replace(") S ", ") Z ");
        assert_eq!(parse_start_time(&zombie), None, "a zombie is gone");
    }

    #[test]
    fn this_process_is_alive_and_round_trips_through_labels() {
        let me = Owner::current().expect("Linux /proc");
        assert_eq!(me.pid, std::process::id());
        assert_eq!(Owner::from_labels(&me.labels()), Some(me.clone()));
        assert!(!me.is_gone(&me));
        // the same pid with another start time: a reused pid, not the owner
        let reused = Owner {
            start: me.start + 1,
            ..me.clone()
        };
        assert!(reused.is_gone(&me));
        // another pid namespace cannot be judged; another boot of this host is over
        let elsewhere = Owner {
            pidns: "pid:[1]".into(),
            start: 0,
            ..me.clone()
        };
        assert!(!elsewhere.is_gone(&me));
        let before_reboot = Owner {
            boot: "another boot".into(),
            ..me.clone()
        };
        assert!(before_reboot.is_gone(&me));
        let other_machine = Owner {
            host: "another host".into(),
            ..before_reboot
        };
        assert!(!other_machine.is_gone(&me));
        // without the marker the labels name no owner
        let mut labels = me.labels();
        labels.remove(MANAGED_LABEL);
        assert_eq!(Owner::from_labels(&labels), None);
    }
}
