//! The client pause gate: a stop-the-world switch for one client's lock tasks.

use std::sync::Arc;

use tokio::sync::watch;

/// A switch that freezes a client's lock activity, as a stop-the-world pause (a long GC,
/// `SIGSTOP`) would: while paused, the lock's operations and its renewal task send
/// nothing, and replies that arrive are held (not fed to the state machine) until
/// [`resume`](PauseGate::resume).
///
/// Cloneable; every clone is the same switch. Give one to
/// [`LockBuilder::pause_gate`](super::LockBuilder::pause_gate) and keep another to flip it.
#[derive(Clone, Debug)]
pub struct PauseGate {
    state: Arc<watch::Sender<bool>>,
}

impl Default for PauseGate {
    fn default() -> Self {
        PauseGate::new()
    }
}

impl PauseGate {
    /// A gate that is open (not paused).
    pub fn new() -> Self {
        PauseGate {
            state: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Pause: the lock's tasks stop at their next send or delivered reply.
    pub fn pause(&self) {
        self.state.send_replace(true);
    }

    /// Resume: everything held goes on.
    pub fn resume(&self) {
        self.state.send_replace(false);
    }

    /// Whether the gate is paused now.
    pub fn is_paused(&self) -> bool {
        *self.state.borrow()
    }

    /// Wait until the gate is open (returns at once when it is).
    pub async fn wait(&self) {
        if !self.is_paused() {
            return;
        }
        let mut rx = self.state.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = rx.wait_for(|paused| !*paused).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn wait_blocks_while_paused() {
        let gate = PauseGate::new();
        gate.wait().await;
        gate.pause();
        assert!(gate.is_paused());
        let g = gate.clone();
        let waiter = tokio::spawn(async move { g.wait().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        gate.resume();
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .unwrap()
            .unwrap();
    }
}
