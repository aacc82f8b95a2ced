//! `watchdog`: `lua-release` whose lease is renewed while held, by a compare-and-pexpire
//! every ttl/3 ([`LockConfig::renew_interval`]), as Redisson's watchdog does.
//!
//! The machine is `lua-release`'s; what makes it a watchdog is that its runner calls
//! `renew` on a timer (the driver's renewal task, the model's renewal action). Renewal
//! keeps a slow holder's lock alive only while the whole process runs: a stop-the-world
//! pause stops the watchdog too, the key expires, and a second client gets in.

use crate::design::LuaRelease;
use crate::machine::{Answer, Grant, LockConfig, Millis, Protocol, Step};

/// `lua-release` renewed by a timer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Watchdog {
    pub(crate) inner: LuaRelease,
}

impl Protocol for Watchdog {
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        self.inner.acquire(cfg, now, token)
    }
    fn release(&mut self, cfg: &LockConfig, now: Millis) -> Step {
        self.inner.release(cfg, now)
    }
    fn renew(&mut self, cfg: &LockConfig, now: Millis) -> Step {
        self.inner.renew(cfg, now)
    }
    fn on_answer(&mut self, cfg: &LockConfig, node: usize, answer: Answer, now: Millis) -> Step {
        self.inner.on_answer(cfg, node, answer, now)
    }
    fn busy(&self) -> bool {
        self.inner.busy()
    }
    fn grant(&self) -> Option<&Grant> {
        self.inner.grant()
    }
}
