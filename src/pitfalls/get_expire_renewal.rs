//! `get-expire-renewal`: `SET key token NX PX ttl`, released by the Lua compare-and-delete,
//! and renewed every ttl/3 by a hand-rolled task: `GET key`, and when it is not nil,
//! `PEXPIRE key ttl`.
//!
//! The scheduled-executor renewal of the step-by-step seed article: it checks that the
//! key exists, not that it is still ours. A holder whose lease ran out (a pause, a slow
//! renewal) renews the lock another client has taken since, believes its own lease
//! extended, and carries on beside the new holder.

use crate::command::{Command, Reply};
use crate::design::{lua_release::compare_and_delete, set_nx_px};
use crate::machine::{Answer, Grant, LockConfig, Millis, NoAnswer, Phase, Protocol, Step};

/// SET NX PX with an unchecked renewal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GetExpireRenewal {
    pub(crate) phase: Phase,
    /// The renewal's GET found a key; its PEXPIRE is in flight.
    expiring: bool,
}

impl Protocol for GetExpireRenewal {
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        set_nx_px::start(&mut self.phase, cfg, now, token)
    }

    fn release(&mut self, cfg: &LockConfig, _now: Millis) -> Step {
        self.phase.start_release(|g| compare_and_delete(cfg, g))
    }

    fn renew(&mut self, cfg: &LockConfig, now: Millis) -> Step {
        self.expiring = false;
        self.phase.start_renew(now, |_| Command::Get {
            key: cfg.key.clone(),
        })
    }

    fn on_answer(&mut self, cfg: &LockConfig, _node: usize, answer: Answer, _now: Millis) -> Step {
        match &self.phase {
            Phase::Acquiring { .. } => set_nx_px::finish(&mut self.phase, cfg, answer),
            Phase::Releasing { .. } => self.phase.finish_release(answer),
            Phase::Renewing { .. } if !self.expiring => match answer {
                // Some value is there: whose, the task does not ask.
                Ok(Reply::Bulk(_)) => {
                    self.expiring = true;
                    Step::send(Command::PExpire {
                        key: cfg.key.clone(),
                        ms: cfg.ttl,
                    })
                }
                Ok(_) => self.phase.finish_renew(cfg, Ok(Reply::Int(0))),
                Err(NoAnswer) => self.phase.finish_renew(cfg, Err(NoAnswer)),
            },
            Phase::Renewing { .. } => {
                self.expiring = false;
                self.phase.finish_renew(cfg, answer)
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Outcome;
    use crate::DesignId;

    #[test]
    fn a_missing_key_ends_the_hold() {
        let cfg = LockConfig::new(DesignId::GetExpireRenewal, "k", 30);
        let mut m = GetExpireRenewal::default();
        m.acquire(&cfg, 0, "t");
        m.on_answer(&cfg, 0, Ok(Reply::Ok), 0);
        let step = m.renew(&cfg, 10);
        assert_eq!(step.sends[0].command, Command::Get { key: "k".into() });
        let step = m.on_answer(&cfg, 0, Ok(Reply::Nil), 11);
        assert_eq!(step.outcome, Some(Outcome::NotHeld));
        assert!(m.grant().is_none());
    }
}
