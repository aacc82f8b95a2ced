//! `set-px-get-del`: `SET key token NX PX ttl`; release by `GET key`, compare with my
//! token, then `DEL key` — two commands.
//!
//! Fails in the gap: the key can expire and be taken by another client between the
//! `GET` and the `DEL`, which then deletes the new holder's lock.

use crate::command::{Command, Reply};
use crate::design::set_nx_px;
use crate::machine::{
    no_renewal, Answer, Grant, LockConfig, Millis, Outcome, Phase, Protocol, Step,
};

/// SET NX PX with a check-then-act release.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SetPxGetDel {
    pub(crate) phase: Phase,
}

impl Protocol for SetPxGetDel {
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        set_nx_px::start(&mut self.phase, cfg, now, token)
    }

    fn release(&mut self, cfg: &LockConfig, _now: Millis) -> Step {
        self.phase.start_release(|_| Command::Get {
            key: cfg.key.clone(),
        })
    }

    fn renew(&mut self, _cfg: &LockConfig, _now: Millis) -> Step {
        no_renewal()
    }

    fn on_answer(&mut self, cfg: &LockConfig, _node: usize, answer: Answer, _now: Millis) -> Step {
        match &mut self.phase {
            Phase::Acquiring { .. } => set_nx_px::finish(&mut self.phase, cfg, answer),
            Phase::Releasing {
                grant,
                step: step @ 0,
            } => match answer {
                Ok(Reply::Bulk(v)) if v == grant.token => {
                    // The check passed; the act comes one round trip later.
                    *step = 1;
                    Step::send(Command::Del {
                        key: cfg.key.clone(),
                    })
                }
                Ok(_) => self.phase.idle(Outcome::NotHeld),
                Err(_) => self.phase.idle(Outcome::Unavailable { node: 0 }),
            },
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
