//! `reentrant`: Redisson's lock. The key is a hash whose one field, the owner id, counts
//! holds; acquire, release and renewal are Lua scripts ([`Script::ReentrantLock`],
//! [`Script::ReentrantUnlock`], [`Script::ReentrantRenew`]), renewal on a ttl/3 timer.
//!
//! Re-entry by the same owner adds a hold; each release removes one and the key goes at
//! zero. It shares `watchdog`'s limits: pauses past the lease and failover lose it.
//! (Redisson also publishes an unlock message for waiters; locklab's waiters poll with
//! jittered retries instead, so the script leaves the `PUBLISH` out.)

use crate::command::{Command, Reply};
use crate::machine::{Answer, Denied, Grant, LockConfig, Millis, NoAnswer, Phase, Protocol, Step};
use crate::script::Script;
use crate::text::Text;

/// Redisson's reentrant hash lock.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reentrant {
    pub(crate) phase: Phase,
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
        let outer = self.phase.grant().cloned();
        let owner = outer
            .as_ref()
            .map_or_else(|| Text::new(token), |g| g.token.clone());
        let step = Step::send(eval(Script::ReentrantLock, cfg, &owner));
        self.phase = Phase::Acquiring {
            token: owner,
            started: now,
            step: 0,
            seen: None,
            outer,
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
                outer,
                ..
            } => {
                let denied = match answer {
                    Ok(Reply::Nil) => {
                        let holds = outer.as_ref().map_or(0, |g| g.holds) + 1;
                        let (token, end) = (token.clone(), cfg.lease_end(*started));
                        return self.phase.hold(token, Some(end), holds);
                    }
                    Ok(reply) => Denied::Held {
                        pttl: reply.as_int(),
                    },
                    Err(NoAnswer) => Denied::Unavailable { node: 0 },
                };
                self.phase.deny(denied)
            }
            // Redisson counts holds locally too and renews while that count is positive:
            // an inner unlock (0) takes one off whatever Redis answered, the last one (1)
            // ends the hold.
            Phase::Releasing { .. } => self.phase.finish_counted_release(
                answer,
                |reply| *reply == Reply::Int(1),
                |reply| *reply == Reply::Int(0),
            ),
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
