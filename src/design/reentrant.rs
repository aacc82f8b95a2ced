//! `reentrant`: Redisson's lock. The key is a hash whose one field, the owner id, counts
//! holds; acquire, release and renewal are Lua scripts ([`Script::ReentrantLock`],
//! [`Script::ReentrantUnlock`], [`Script::ReentrantRenew`]), renewal on a ttl/3 timer.
//!
//! Re-entry by the same owner adds a hold; each release removes one and the key goes at
//! zero. It shares `watchdog`'s limits: pauses past the lease and failover lose it.
//! (Redisson also publishes an unlock message for waiters; locklab's waiters poll with
//! jittered retries instead, so the script leaves the `PUBLISH` out.)

use crate::command::{Command, Reply};
use crate::machine::{
    Answer, Denied, Grant, LockConfig, Millis, NoAnswer, Outcome, Phase, Protocol, Step,
};
use crate::script::Script;

/// Redisson's reentrant hash lock.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reentrant {
    phase: Phase,
}

fn eval(script: Script, cfg: &LockConfig, owner: &str) -> Command {
    Command::Eval {
        script,
        keys: vec![cfg.key.clone()],
        args: vec![cfg.ttl.to_string(), owner.to_string()],
    }
}

impl Protocol for Reentrant {
    /// While held, this is a re-entry with the held owner id (`token` is ignored).
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        let (owner, holds) = match &self.phase {
            Phase::Held(g) => (g.token.clone(), g.holds),
            _ => (token.to_string(), 0),
        };
        let step = Step::send(eval(Script::ReentrantLock, cfg, &owner));
        self.phase = Phase::Acquiring {
            token: owner,
            started: now,
            step: 0,
            seen: None,
            holds,
        };
        step
    }

    fn release(&mut self, cfg: &LockConfig, _now: Millis) -> Step {
        self.phase
            .start_release(|g| eval(Script::ReentrantUnlock, cfg, &g.token))
    }

    fn renew(&mut self, cfg: &LockConfig, now: Millis) -> Step {
        self.phase
            .start_renew(now, |g| eval(Script::ReentrantRenew, cfg, &g.token))
    }

    fn on_answer(&mut self, cfg: &LockConfig, _node: usize, answer: Answer, _now: Millis) -> Step {
        match &self.phase {
            Phase::Acquiring {
                token,
                started,
                holds,
                ..
            } => match answer {
                Ok(Reply::Nil) => {
                    let (token, end, holds) = (token.clone(), cfg.lease_end(*started), holds + 1);
                    self.phase.hold(token, Some(end), holds)
                }
                Ok(reply) => self.phase.idle(Outcome::Denied(Denied::Held {
                    pttl: reply.as_int(),
                })),
                Err(NoAnswer) => self
                    .phase
                    .idle(Outcome::Denied(Denied::Unavailable { node: 0 })),
            },
            Phase::Releasing { grant, .. } => match answer {
                // Still held by us with one hold fewer. The script also reset the lease, but
                // we do not know when it ran, so the old (earlier) lease end stands.
                Ok(Reply::Int(0)) => {
                    let grant = Grant {
                        holds: grant.holds.saturating_sub(1).max(1),
                        ..grant.clone()
                    };
                    let holds_left = grant.holds;
                    self.phase = Phase::Held(grant);
                    Step::done(Outcome::Released { holds_left })
                }
                Ok(Reply::Int(1)) => self.phase.idle(Outcome::Released { holds_left: 0 }),
                Ok(_) => self.phase.idle(Outcome::NotHeld),
                Err(NoAnswer) => self.phase.idle(Outcome::Unavailable { node: 0 }),
            },
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
