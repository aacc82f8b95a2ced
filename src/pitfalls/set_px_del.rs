//! `set-px-del`: `SET key token NX PX ttl`, release by plain `DEL key`.
//!
//! Fails when the holder outlives its ttl: its `DEL` removes the next holder's lock.

use crate::command::Command;
use crate::design::set_nx_px;
use crate::machine::{no_renewal, Answer, Grant, LockConfig, Millis, Phase, Protocol, Step};

/// SET NX PX with a blind DEL.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SetPxDel {
    pub(crate) phase: Phase,
}

impl Protocol for SetPxDel {
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        set_nx_px::start(&mut self.phase, cfg, now, token)
    }

    fn release(&mut self, cfg: &LockConfig, _now: Millis) -> Step {
        self.phase.start_release(|_| Command::Del {
            key: cfg.key.clone(),
        })
    }

    fn renew(&mut self, _cfg: &LockConfig, _now: Millis) -> Step {
        no_renewal()
    }

    fn on_answer(&mut self, cfg: &LockConfig, _node: usize, answer: Answer, _now: Millis) -> Step {
        match &self.phase {
            Phase::Acquiring { .. } => set_nx_px::finish(&mut self.phase, cfg, answer),
            Phase::Releasing { .. } => self.phase.finish_release(answer),
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
