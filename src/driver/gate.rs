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
/// `timing.max_step_delay`). The legs of a fan-out (Redlock) — its requests on their
/// way out, its replies on their way back — pass side by side, each on its own
/// ([`pass_leg`](PauseGate::pass_leg)), as the model's legs travel in parallel: one
/// delay for all of them, not one per master. [`fast_legs`](PauseGate::fast_legs) lets
/// the legs to some nodes take no time while the others take the delay, as the model's
/// legs are each delayed on their own (a slow link to one master, a fast one to
/// another). With [`slow_operations`](PauseGate::slow_operations) only
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
    /// The nodes whose legs take no time while steps are slow (bit `n`: node `n`).
    fast_legs: Arc<AtomicU64>,
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
            fast_legs: Arc::new(AtomicU64::new(0)),
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

    /// Uneven legs: while steps are slow, the legs to the nodes in `nodes` (node indexes,
    /// as the lock's node list orders them; at most 64) take no time, and those to the
    /// other nodes take the delay. Until [`steady`](PauseGate::steady), or the next call.
    pub fn fast_legs(&self, nodes: &[usize]) {
        let mask = nodes
            .iter()
            .filter(|&&n| n < 64)
            .fold(0u64, |mask, &n| mask | (1 << n));
        self.fast_legs.store(mask, Ordering::SeqCst);
    }

    /// End slow steps: passages take no time again, on every leg.
    pub fn steady(&self) {
        self.step_delay_us.store(0, Ordering::SeqCst);
        self.renewal_delay_us.store(0, Ordering::SeqCst);
        self.fast_legs.store(0, Ordering::SeqCst);
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
        self.pass_after(self.delay(whose)).await
    }

    /// A leg of `whose` to or from `node` (a request on its way out, a reply on its way
    /// back): the delay of a passage, or none when the node's legs are
    /// [fast](PauseGate::fast_legs); then until the gate is open.
    pub async fn pass_leg(&self, whose: Passage, node: usize) {
        self.pass_after(self.leg_delay(whose, node)).await
    }

    /// The delay of a leg of `whose` to or from `node` now.
    pub fn leg_delay(&self, whose: Passage, node: usize) -> Duration {
        let fast = node < 64 && self.fast_legs.load(Ordering::SeqCst) & (1 << node) != 0;
        if fast {
            Duration::ZERO
        } else {
            self.delay(whose)
        }
    }

    async fn pass_after(&self, delay: Duration) {
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

    #[tokio::test]
    async fn fast_legs_take_no_time_while_the_others_are_slow() {
        let gate = PauseGate::new();
        gate.slow_steps(Duration::from_millis(40));
        gate.fast_legs(&[0, 2]);
        assert_eq!(gate.leg_delay(Passage::Operation, 0), Duration::ZERO);
        assert_eq!(
            gate.leg_delay(Passage::Operation, 1),
            Duration::from_millis(40)
        );
        assert_eq!(gate.leg_delay(Passage::Renewal, 2), Duration::ZERO);
        let start = tokio::time::Instant::now();
        gate.pass_leg(Passage::Operation, 1).await;
        assert!(start.elapsed() >= Duration::from_millis(40));
        tokio::time::timeout(
            Duration::from_millis(20),
            gate.pass_leg(Passage::Operation, 2),
        )
        .await
        .expect("a fast leg takes no time");
        // A paused gate holds a fast leg too.
        gate.pause();
        let g = gate.clone();
        let leg = tokio::spawn(async move { g.pass_leg(Passage::Operation, 0).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!leg.is_finished());
        gate.resume();
        tokio::time::timeout(Duration::from_secs(1), leg)
            .await
            .unwrap()
            .unwrap();
        gate.steady();
        assert_eq!(gate.leg_delay(Passage::Operation, 1), Duration::ZERO);
    }
}
