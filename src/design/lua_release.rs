//! `lua-release`: `SET key token NX PX ttl`; release by a Lua compare-and-delete;
//! `renew` (extend) by a Lua compare-and-pexpire.
//!
//! Safe on one node as long as the holder finishes within the ttl. A holder that pauses
//! past the ttl (GC, stop-the-world) still believes it holds the lock while another
//! client holds it too: only fencing protects the resource then. Asynchronous
//! replication loses the key on failover.

use crate::command::Command;
use crate::design::set_nx_px;
use crate::machine::{Answer, Grant, LockConfig, Millis, Phase, Protocol, Step};
use crate::script::Script;

/// SET NX PX with a compare-and-delete release.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LuaRelease {
    pub(crate) phase: Phase,
}

pub(crate) fn compare_and_delete(cfg: &LockConfig, grant: &Grant) -> Command {
    Command::Eval {
        script: Script::CompareAndDelete,
        keys: vec![cfg.key.clone()],
        args: vec![grant.token.to_string()],
    }
}

pub(crate) fn compare_and_pexpire(cfg: &LockConfig, grant: &Grant) -> Command {
    Command::Eval {
        script: Script::CompareAndPexpire,
        keys: vec![cfg.key.clone()],
        args: vec![grant.token.to_string(), cfg.ttl.to_string()],
    }
}

impl Protocol for LuaRelease {
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        set_nx_px::start(&mut self.phase, cfg, now, token)
    }

    fn release(&mut self, cfg: &LockConfig, _now: Millis) -> Step {
        self.phase.start_release(|g| compare_and_delete(cfg, g))
    }

    fn renew(&mut self, cfg: &LockConfig, now: Millis) -> Step {
        self.phase.start_renew(now, |g| compare_and_pexpire(cfg, g))
    }

    fn on_answer(&mut self, cfg: &LockConfig, _node: usize, answer: Answer, _now: Millis) -> Step {
        match &self.phase {
            Phase::Acquiring { .. } => set_nx_px::finish(&mut self.phase, cfg, answer),
            Phase::Releasing { .. } => self.phase.finish_release(answer),
            Phase::Renewing { .. } => self.phase.finish_renew(cfg, answer),
            _ => Step::default(),
        }
    }

    fn busy(&self) -> bool {
        self.phase.busy()
    }

    fn grant(&self) -> Option<&Grant> {
        self.phase.grant()
    }
}
