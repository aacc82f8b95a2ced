//! The driver's clock, and the shift a harness gives it to emulate a client clock jump.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use crate::Millis;

/// The driver's local clock, in milliseconds: tokio's monotonic `Instant` since the lock
/// was built, anchored at the Unix time of that moment, plus its [`ClockShift`].
/// Monotonic while the lock lives (unless shifted back), and comparable across clients
/// as far as their system clocks agree (the `getset-timestamp` pitfall writes these
/// readings into Redis for other clients to compare). The machines get their `now`
/// from here and nowhere else.
#[derive(Clone, Debug)]
pub(crate) struct Clock {
    origin: tokio::time::Instant,
    origin_ms: Millis,
    shift: ClockShift,
}

impl Clock {
    pub(crate) fn new(shift: ClockShift) -> Self {
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Clock {
            origin: tokio::time::Instant::now(),
            origin_ms: Millis::try_from(unix.as_millis()).unwrap_or(Millis::MAX),
            shift,
        }
    }

    pub(crate) fn now(&self) -> Millis {
        let elapsed = Millis::try_from(self.origin.elapsed().as_millis()).unwrap_or(Millis::MAX);
        self.origin_ms
            .saturating_add(elapsed)
            .saturating_add(self.shift.ms())
    }
}

/// Milliseconds added to every reading of a lock's clock: a harness's emulation of a
/// jump of the client's clock (an NTP step, a wrong time set by hand). A lock anchors
/// its clock at the system time once, when built, and counts monotonic time from there,
/// so a real step of the system clock would not reach a lock already built; this
/// shift does, at once.
///
/// Cloneable; every clone is the same shift. Give one to
/// [`LockBuilder::clock_shift`](super::LockBuilder::clock_shift) and keep another to
/// [`jump`](ClockShift::jump). Starts at 0.
#[derive(Clone, Debug, Default)]
pub struct ClockShift {
    ms: Arc<AtomicI64>,
}

impl ClockShift {
    /// A shift of 0.
    pub fn new() -> Self {
        ClockShift::default()
    }

    /// The clock jumps by `ms` (forward when positive): the shift grows by `ms`.
    pub fn jump(&self, ms: i64) {
        self.ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// The shift now, in milliseconds.
    pub fn ms(&self) -> i64 {
        self.ms.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_jump_moves_every_later_reading_and_every_clone_shares_it() {
        let shift = ClockShift::new();
        let clock = Clock::new(shift.clone());
        let before = clock.now();
        shift.clone().jump(60_000);
        let after = clock.now();
        assert!(after >= before + 60_000, "{before} -> {after}");
        assert!(after < before + 61_000, "{before} -> {after}");
        assert_eq!(shift.ms(), 60_000);
    }
}
