//! `setnx-expire`: `SETNX key token`, then `PEXPIRE key ttl` as a second command;
//! release by `DEL key`.
//!
//! Fails twice: a crash between the two commands leaves a key without expiry (held
//! forever), and a holder slower than the ttl deletes the next holder's lock with `DEL`.

use crate::command::{Command, Reply};
use crate::machine::{
    no_renewal, Answer, Denied, Grant, LockConfig, Millis, Outcome, Phase, Protocol, Step,
};

/// SETNX followed by a separate PEXPIRE.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SetnxExpire {
    pub(crate) phase: Phase,
}

impl Protocol for SetnxExpire {
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        self.phase = Phase::acquiring(token, now);
        Step::send(Command::SetNx {
            key: cfg.key.clone(),
            value: token.to_string(),
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
            Phase::Acquiring { step: step @ 0, .. } => match answer {
                Ok(Reply::Int(1)) => {
                    // The window: the key exists now, without an expiry.
                    *step = 1;
                    Step::send(Command::PExpire {
                        key: cfg.key.clone(),
                        ms: cfg.ttl,
                    })
                }
                Ok(_) => self
                    .phase
                    .idle(Outcome::Denied(Denied::Held { pttl: None })),
                Err(_) => self
                    .phase
                    .idle(Outcome::Denied(Denied::Unavailable { node: 0 })),
            },
            Phase::Acquiring { token, started, .. } => match answer {
                Ok(_) => {
                    let (token, end) = (token.clone(), cfg.lease_end(*started));
                    self.phase.hold(token, Some(end), 1)
                }
                Err(_) => self
                    .phase
                    .idle(Outcome::Denied(Denied::Unavailable { node: 0 })),
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
