//! `naive-setnx`: `SETNX key token`, release by `DEL key`.
//!
//! Fails when the holder crashes: nothing ever removes the key, the lock is held forever.

use crate::command::{Command, Reply};
use crate::machine::{
    no_renewal, Answer, Denied, Grant, LockConfig, Millis, Outcome, Phase, Protocol, Step,
};

/// The naive SETNX lock (no expiry).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NaiveSetnx {
    pub(crate) phase: Phase,
}

impl Protocol for NaiveSetnx {
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

    fn on_answer(&mut self, _cfg: &LockConfig, _node: usize, answer: Answer, _now: Millis) -> Step {
        match &self.phase {
            Phase::Acquiring { token, .. } => match answer {
                Ok(Reply::Int(1)) => {
                    let token = token.clone();
                    self.phase.hold(token, None, 1)
                }
                Ok(_) => self
                    .phase
                    .idle(Outcome::Denied(Denied::Held { pttl: None })),
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
