//! The atomic acquire most designs share: `SET key token NX PX ttl`.

use crate::command::{Command, Reply};
use crate::machine::{Answer, Denied, LockConfig, Millis, Outcome, Phase, Step};

/// Send `SET key token NX PX ttl`.
pub(crate) fn start(phase: &mut Phase, cfg: &LockConfig, now: Millis, token: &str) -> Step {
    *phase = Phase::acquiring(token, now);
    Step::send(Command::SetNxPx {
        key: cfg.key.clone(),
        value: token.to_string(),
        px: cfg.ttl,
    })
}

/// Its answer: `OK` grants the lock for ttl from the moment the command was sent.
pub(crate) fn finish(phase: &mut Phase, cfg: &LockConfig, answer: Answer) -> Step {
    let Phase::Acquiring { token, started, .. } = phase else {
        return Step::default();
    };
    match answer {
        Ok(Reply::Ok) => {
            let (token, end) = (token.clone(), cfg.lease_end(*started));
            phase.hold(token, Some(end), 1)
        }
        Ok(_) => phase.idle(Outcome::Denied(Denied::Held { pttl: None })),
        // Maybe set, maybe not: the key (if any) expires by itself after ttl.
        Err(_) => phase.idle(Outcome::Denied(Denied::Unavailable { node: 0 })),
    }
}
