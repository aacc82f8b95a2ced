//! `exists-set`: check, then set — `EXISTS key`, and when it answers 0, `SET key token
//! PX ttl`; release by `DEL key`.
//!
//! The first scheme of the seed article on implementing a lock "elegantly": look for the
//! key, take it if nobody has it. The check and the set are two commands, so two clients
//! can both see no key and both set it: it fails with no fault at all. (The article's
//! version sets no expiry; this one does, so that the race is the flaw shown.)

use crate::command::{Command, Reply};
use crate::design::set_nx_px;
use crate::machine::{
    no_renewal, Answer, Denied, Grant, LockConfig, Millis, Outcome, Phase, Protocol, Step,
};

/// EXISTS, then a plain SET PX.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExistsSet {
    pub(crate) phase: Phase,
}

impl Protocol for ExistsSet {
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        self.phase = Phase::acquiring(token, now);
        Step::send(Command::Exists {
            key: cfg.key.clone(),
        })
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
        match &mut self.phase {
            Phase::Acquiring {
                token,
                step: step @ 0,
                ..
            } => match answer {
                Ok(Reply::Int(0)) => {
                    // Nobody has it — as of one round trip ago.
                    *step = 1;
                    Step::send(Command::SetPx {
                        key: cfg.key.clone(),
                        value: token.to_string(),
                        px: cfg.ttl,
                    })
                }
                Ok(_) => self
                    .phase
                    .idle(Outcome::Denied(Denied::Held { pttl: None })),
                Err(_) => self
                    .phase
                    .idle(Outcome::Denied(Denied::Unavailable { node: 0 })),
            },
            // The SET answers as SET NX PX does: OK grants the lock for ttl from the start.
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
