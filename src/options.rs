//! The orthogonal options run after any design's acquire: `WAIT n` for replicas, then a
//! fencing token from `INCR`. Both talk to node 0 (the master; Redlock's first master).

use crate::command::{Command, Reply};
use crate::machine::{Answer, Denied, Grant, LockConfig, Millis, Outcome, Step};

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Options {
    phase: Phase,
    fence: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
enum Phase {
    #[default]
    Idle,
    Waiting(Grant),
    Fencing(Grant),
    /// The grant is being released because an option failed; then report this.
    Abandoning(Denied),
}

impl Options {
    pub(crate) fn busy(&self) -> bool {
        matches!(self.phase, Phase::Waiting(_) | Phase::Fencing(_))
    }

    pub(crate) fn abandoning(&self) -> bool {
        matches!(self.phase, Phase::Abandoning(_))
    }

    /// Zero the lease end of the grant an option holds on to (see
    /// [`crate::LockMachine::forget_reported_values`]).
    pub(crate) fn forget_reported_values(&mut self) {
        if let Phase::Waiting(g) | Phase::Fencing(g) = &mut self.phase {
            g.forget_lease_end();
        }
    }

    /// Move the lease end of the grant an option holds on to (see
    /// [`crate::LockMachine::shift_times`]).
    pub(crate) fn shift_times(&mut self, by: Millis, floor: Millis) {
        if let Phase::Waiting(g) | Phase::Fencing(g) = &mut self.phase {
            g.shift_lease_end(by, floor);
        }
    }

    pub(crate) fn fence(&self) -> Option<u64> {
        self.fence
    }

    /// The core granted the lock: run the options, or report the grant at once.
    pub(crate) fn start(&mut self, cfg: &LockConfig, grant: Grant) -> Step {
        self.fence = None;
        if cfg.wait_replicas > 0 {
            self.phase = Phase::Waiting(grant);
            return Step::send(Command::Wait {
                replicas: cfg.wait_replicas,
                timeout_ms: cfg.wait_timeout_ms,
            });
        }
        self.fence_or_done(cfg, grant)
    }

    fn fence_or_done(&mut self, cfg: &LockConfig, grant: Grant) -> Step {
        if cfg.fencing {
            self.phase = Phase::Fencing(grant);
            return Step::send(Command::Incr {
                key: cfg.fence_key.clone(),
            });
        }
        self.phase = Phase::Idle;
        Step::done(Outcome::Acquired(grant))
    }

    /// An answer for an option's command. The flag asks the machine to release the
    /// core's grant (the option failed); the release's outcome then goes to `abandoned`.
    pub(crate) fn on_answer(&mut self, cfg: &LockConfig, answer: Answer) -> (Step, bool) {
        match std::mem::take(&mut self.phase) {
            Phase::Waiting(grant) => match answer {
                Ok(Reply::Int(acks)) if acks >= cfg.wait_replicas as i64 => {
                    (self.fence_or_done(cfg, grant), false)
                }
                Ok(reply) => {
                    let acks = reply.as_int().unwrap_or(0);
                    self.phase = Phase::Abandoning(Denied::NotReplicated { acks });
                    (Step::default(), true)
                }
                Err(_) => {
                    self.phase = Phase::Abandoning(Denied::Unavailable { node: 0 });
                    (Step::default(), true)
                }
            },
            Phase::Fencing(mut grant) => match answer {
                Ok(Reply::Int(token)) if token > 0 => {
                    self.fence = Some(token as u64);
                    grant.fence = self.fence;
                    (Step::done(Outcome::Acquired(grant)), false)
                }
                _ => {
                    self.phase = Phase::Abandoning(Denied::Unavailable { node: 0 });
                    (Step::default(), true)
                }
            },
            other => {
                self.phase = other;
                (Step::default(), false)
            }
        }
    }

    /// The release after a failed option finished: report why the acquire failed.
    pub(crate) fn abandoned(&mut self, _release: &Outcome) -> Outcome {
        let denied = match std::mem::take(&mut self.phase) {
            Phase::Abandoning(d) => d,
            _ => Denied::Unavailable { node: 0 },
        };
        self.fence = None;
        Outcome::Denied(denied)
    }
}
