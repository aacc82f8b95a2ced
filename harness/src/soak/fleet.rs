//! The soak's clients as the nemesis sees them: the production driver's tasks
//! ([`client`](super::client)) or a library's adapter processes
//! ([`adapter`](super::adapter)). Both answer the same handful of calls, so that the
//! nemesis aims at a holder the same way whichever lock it holds.

use std::time::Duration;

use locklab::driver::{ClockShift, PauseGate};
use tokio::task::JoinHandle;

use super::adapter::AdapterClients;
use super::client::DriverClients;
use crate::run::nemesis::Processes;

/// The soak's clients.
pub enum Clients {
    /// The production driver, one task per client (boxed: its spec is large).
    Driver(Box<DriverClients>),
    /// A third-party library, one adapter process per client.
    Adapter(AdapterClients),
}

impl Clients {
    /// Number of clients.
    pub fn len(&self) -> usize {
        match self {
            Clients::Driver(d) => d.len(),
            Clients::Adapter(a) => a.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Client `c`'s pause gate: its steps, delayed by slow steps.
    pub fn gate(&self, c: usize) -> PauseGate {
        match self {
            Clients::Driver(d) => d.gate(c),
            Clients::Adapter(a) => a.gate(c),
        }
    }

    /// The shift of client `c`'s clock (a client clock jump moves it).
    pub fn clock(&self, c: usize) -> ClockShift {
        match self {
            Clients::Driver(d) => d.clock(c),
            Clients::Adapter(a) => a.clock(c),
        }
    }

    /// Stop-the-world pause of client `c`: its gate, and an adapter's process stopped.
    pub fn pause(&self, c: usize) {
        match self {
            Clients::Driver(d) => d.gate(c).pause(),
            Clients::Adapter(a) => a.pause(c),
        }
    }

    /// The paused client `c` runs again.
    pub fn resume(&self, c: usize) {
        match self {
            Clients::Driver(d) => d.gate(c).resume(),
            Clients::Adapter(a) => a.resume(c),
        }
    }

    /// Client `c` crashes. Recorded.
    pub fn crash(&self, c: usize) {
        match self {
            Clients::Driver(d) => d.crash(c),
            Clients::Adapter(a) => a.crash(c),
        }
    }

    /// Crashed client `c` comes back as a new process.
    pub fn restart(&self, c: usize) {
        match self {
            Clients::Driver(d) => d.restart(c),
            Clients::Adapter(a) => a.restart(c),
        }
    }

    /// Wait up to `grace` for every client to finish its round, then stop the rest.
    pub async fn stop(&self, grace: Duration) {
        match self {
            Clients::Driver(d) => d.stop(grace).await,
            Clients::Adapter(a) => a.stop(grace).await,
        }
    }

    /// The first protocol error of an adapter, once there is one.
    pub fn fatal(&self) -> Option<String> {
        match self {
            Clients::Driver(_) => None,
            Clients::Adapter(a) => a.fatal(),
        }
    }
}

/// Wait until `grace` is over for the clients' `tasks` to finish their rounds, and
/// abort those that did not (waiting until they are gone, so that what they own is
/// dropped).
pub(super) async fn finish(tasks: Vec<JoinHandle<()>>, grace: Duration) {
    let deadline = tokio::time::Instant::now() + grace;
    for mut t in tasks {
        if tokio::time::timeout_at(deadline, &mut t).await.is_err() {
            t.abort();
            let _ = t.await;
        }
    }
}

/// A soak's clients, as the nemesis strikes their processes.
impl Processes for &Clients {
    fn pause(&mut self, c: usize) {
        Clients::pause(self, c);
    }

    fn resume(&mut self, c: usize) {
        Clients::resume(self, c);
    }

    fn crash(&mut self, c: usize, _urls: &[String]) {
        // Its driver connects anew when the fleet restarts it.
        Clients::crash(self, c);
    }

    fn jump_clock(&mut self, c: usize, ms: i64) -> String {
        let shift = self.clock(c);
        shift.jump(ms);
        format!(
            "client{} clock +{ms} ms (its lock's ClockShift, now {} ms: an emulation)",
            c + 1,
            shift.ms()
        )
    }
}
