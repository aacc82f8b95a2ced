//! The client pause gate: a stop-the-world switch for one client's lock tasks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// A switch that freezes a client's lock activity, as a stop-the-world pause (a long GC,
/// `SIGSTOP`) would: while paused, the lock's operations and its renewal task send
/// nothing, and replies that arrive are held (not fed to the state machine) until
/// [`resume`](PauseGate::resume).
///
/// It also emulates a slow client: with [`slow_steps`](PauseGate::slow_steps) every
/// passage through the gate — before each send, after each reply arrives — takes the
/// given delay, as a loaded machine or a slow network would (the model's step delays,
/// `timing.max_step_delay`). The replies of a fan-out (Redlock) pass side by side, as
/// the model's legs travel in parallel: one delay for all of them, not one per master. With [`slow_operations`](PauseGate::slow_operations) only
/// the lock's operations are slow and its renewal task keeps time: the model delays
/// each step on its own, so a holder's work can lag while its watchdog, a timer of its
/// own, renews on time.
///
/// Cloneable; every clone is the same switch. Give one to
/// [`LockBuilder::pause_gate`](super::LockBuilder::pause_gate) and keep another to flip it.
#[derive(Clone, Debug)]
pub struct PauseGate {
    state: Arc<watch::Sender<bool>>,
    /// The delay of every passage of an operation, in µs (0: none).
    step_delay_us: Arc<AtomicU64>,
    /// The delay of every passage of the renewal task, in µs (0: none).
    renewal_delay_us: Arc<AtomicU64>,
}

/// Whose passage through the gate: one of the lock's operations (acquire, release, an
/// explicit extend, the caller's own steps), or the renewal task's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passage {
    /// An operation the caller awaits.
    Operation,
    /// A renewal by the lock's renewal task (the watchdog).
    Renewal,
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
            step_delay_us: Arc::new(AtomicU64::new(0)),
            renewal_delay_us: Arc::new(AtomicU64::new(0)),
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

    /// Slow steps: from now on every passage through the gate first waits `delay`
    /// (a zero delay ends them, as [`steady`](PauseGate::steady) does).
    pub fn slow_steps(&self, delay: Duration) {
        let us = micros(delay);
        self.step_delay_us.store(us, Ordering::SeqCst);
        self.renewal_delay_us.store(us, Ordering::SeqCst);
    }

    /// Slow operations: from now on every passage of the lock's operations first waits
    /// `delay`, while the renewal task's passages take no time.
    pub fn slow_operations(&self, delay: Duration) {
        self.step_delay_us.store(micros(delay), Ordering::SeqCst);
        self.renewal_delay_us.store(0, Ordering::SeqCst);
    }

    /// End slow steps: passages take no time again.
    pub fn steady(&self) {
        self.step_delay_us.store(0, Ordering::SeqCst);
        self.renewal_delay_us.store(0, Ordering::SeqCst);
    }

    /// The delay of every passage of an operation now (zero unless
    /// [`slow_steps`](PauseGate::slow_steps) or
    /// [`slow_operations`](PauseGate::slow_operations)).
    pub fn step_delay(&self) -> Duration {
        self.delay(Passage::Operation)
    }

    /// The delay of a passage of `whose` now.
    pub fn delay(&self, whose: Passage) -> Duration {
        let us = match whose {
            Passage::Operation => &self.step_delay_us,
            Passage::Renewal => &self.renewal_delay_us,
        };
        Duration::from_micros(us.load(Ordering::SeqCst))
    }

    /// Wait until the gate is open (returns at once when it is, and no step delay is
    /// set): an operation's passage.
    pub async fn wait(&self) {
        self.pass(Passage::Operation).await
    }

    /// A passage of `whose`: its delay, if any, then until the gate is open.
    pub async fn pass(&self, whose: Passage) {
        let delay = self.delay(whose);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if !self.is_paused() {
            return;
        }
        let mut rx = self.state.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = rx.wait_for(|paused| !*paused).await;
    }
}

fn micros(delay: Duration) -> u64 {
    u64::try_from(delay.as_micros()).unwrap_or(u64::MAX)
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

    #[tokio::test]
    async fn slow_steps_delay_every_passage_until_steady() {
        let gate = PauseGate::new();
        gate.slow_steps(Duration::from_millis(30));
        assert_eq!(gate.step_delay(), Duration::from_millis(30));
        let start = tokio::time::Instant::now();
        gate.wait().await;
        gate.wait().await;
        assert!(start.elapsed() >= Duration::from_millis(60));
        gate.steady();
        assert_eq!(gate.step_delay(), Duration::ZERO);
        tokio::time::timeout(Duration::from_secs(1), gate.wait())
            .await
            .expect("a steady, open gate lets a passage through");
    }

    #[tokio::test]
    async fn slow_operations_leave_the_renewal_task_on_time() {
        let gate = PauseGate::new();
        gate.slow_operations(Duration::from_millis(40));
        assert_eq!(gate.delay(Passage::Operation), Duration::from_millis(40));
        assert_eq!(gate.delay(Passage::Renewal), Duration::ZERO);
        let start = tokio::time::Instant::now();
        gate.pass(Passage::Operation).await;
        assert!(start.elapsed() >= Duration::from_millis(40));
        tokio::time::timeout(Duration::from_millis(20), gate.pass(Passage::Renewal))
            .await
            .expect("a renewal's passage takes no time while only operations are slow");
        gate.slow_steps(Duration::from_millis(40));
        assert_eq!(gate.delay(Passage::Renewal), Duration::from_millis(40));
        gate.steady();
        assert_eq!(gate.delay(Passage::Operation), Duration::ZERO);
        assert_eq!(gate.delay(Passage::Renewal), Duration::ZERO);
    }
}
