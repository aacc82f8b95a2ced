//! `getset-timestamp`: the value is the holder's expiry time by its own clock.
//! `SETNX key expiry`; when that fails, `GET key`, and if the stored expiry has passed by
//! *my* clock, `GETSET key my-expiry` and win only if the old value is the one I read.
//! Release by `DEL key`.
//!
//! Fails on clock skew (a fast clock steals a live lock), on two stealers (the loser has
//! already overwritten the winner's expiry), and on release (no owner identity: `DEL`
//! removes whoever holds it).

use crate::command::{Command, Reply};
use crate::machine::{
    no_renewal, Answer, Denied, Grant, LockConfig, Millis, Outcome, Phase, Protocol, Step,
};
use crate::text::Text;

/// The GETSET timestamp lock.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GetsetTimestamp {
    pub(crate) phase: Phase,
}

impl Protocol for GetsetTimestamp {
    /// The token is ignored: the lock's value is an expiry timestamp, not an identity.
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, _token: &str) -> Step {
        let expiry = (now.saturating_add(cfg.ttl_ms())).to_string();
        self.phase = Phase::acquiring(&expiry, now);
        Step::send(Command::SetNx {
            key: cfg.key.clone(),
            value: expiry,
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

    fn on_answer(&mut self, cfg: &LockConfig, _node: usize, answer: Answer, now: Millis) -> Step {
        let busy = Outcome::Denied(Denied::Held { pttl: None });
        let Ok(reply) = answer else {
            if matches!(self.phase, Phase::Releasing { .. }) {
                return self.phase.finish_release(answer);
            }
            return self
                .phase
                .idle(Outcome::Denied(Denied::Unavailable { node: 0 }));
        };
        match &mut self.phase {
            Phase::Acquiring {
                token,
                started,
                step,
                seen,
                ..
            } => match (*step, reply) {
                (0, Reply::Int(1)) => {
                    let (token, end) = (token.clone(), started.saturating_add(cfg.ttl_ms()));
                    self.phase.hold(token, Some(end), 1)
                }
                (0, _) => {
                    *step = 1;
                    Step::send(Command::Get {
                        key: cfg.key.clone(),
                    })
                }
                (1, Reply::Bulk(value)) => match value.parse::<Millis>() {
                    // Expired by my clock: try to steal it.
                    Ok(expiry) if expiry < now => {
                        let mine = (now.saturating_add(cfg.ttl_ms())).to_string();
                        *step = 2;
                        *seen = Some(Text::from(value));
                        *token = Text::new(&mine);
                        *started = now;
                        Step::send(Command::GetSet {
                            key: cfg.key.clone(),
                            value: mine,
                        })
                    }
                    _ => self.phase.idle(busy),
                },
                (1, _) => self.phase.idle(busy),
                (2, reply) => {
                    let won = matches!((&reply, seen.as_deref()), (Reply::Bulk(old), Some(s)) if old == s);
                    if won {
                        let (token, end) = (token.clone(), started.saturating_add(cfg.ttl_ms()));
                        self.phase.hold(token, Some(end), 1)
                    } else {
                        // Lost the race, but the GETSET already overwrote the winner's expiry.
                        self.phase.idle(busy)
                    }
                }
                _ => Step::default(),
            },
            Phase::Releasing { .. } => self.phase.finish_release(Ok(reply)),
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
