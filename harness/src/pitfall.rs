//! Where each pitfall comes from: the pattern in the seed articles (five Chinese blog
//! posts on Redis locks, cited by their original titles with an English gloss; see
//! docs/ARCHITECTURE.md) that a scenario's design or fault reproduces, in the project's own
//! words.

use locklab::{DesignId, Fencing};
use locklab_model::fault::FaultKind;
use locklab_model::scenario::Scenario;

/// One seed-article pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The seed article(s), by title, separated by "; ".
    pub seeds: &'static str,
    /// The pattern as the article presents it.
    pub pattern: &'static str,
}

/// A seed article's citation: its original title and an English gloss.
macro_rules! seed {
    (0) => {
        "“Redis中的分布式锁(步步为营)” (Distributed locks in Redis, step by step)"
    };
    (1) => {
        "“經典:Redis分布式鎖的正確實現方式” (A classic: the correct way to implement a Redis distributed lock)"
    };
    (2) => {
        "“分布式锁必须要考虑的问题” (What a distributed lock must take into account)"
    };
    (3) => {
        "“如何优雅地用Redis实现分布式锁” (How to implement a distributed lock with Redis elegantly)"
    };
    (4) => {
        "“Redis分布式事务锁实现” (Implementing a Redis distributed transaction lock)"
    };
}

/// Every seed article's citation.
#[cfg(test)]
const SEEDS: [&str; 5] = [seed!(0), seed!(1), seed!(2), seed!(3), seed!(4)];

/// The seed pattern a built-in design reproduces; a custom lock reproduces none.
fn design_pattern(design: DesignId) -> Option<Pattern> {
    Some(match design {
        DesignId::NaiveSetnx => Pattern {
            seeds: seed!(0),
            pattern: "the first step of the step-by-step lock: SETNX key value to take it, DEL \
                      to release it. The article's next step adds an expiry because a holder \
                      that dies never deletes the key.",
        },
        DesignId::ExistsSet => Pattern {
            seeds: seed!(3),
            pattern: "the article's first scheme: look for the key (existsKey), and if it is \
                      not there, set it. The check and the set are two commands, so two \
                      clients can both find no key and both take the lock.",
        },
        DesignId::GetExpireRenewal => Pattern {
            seeds: seed!(0),
            pattern: "the hand-rolled renewal: a scheduled executor that, every few seconds, \
                      checks that the key is still there (GET is not null) and extends it \
                      with EXPIRE, without asking whose it is, so it renews a lock that now \
                      belongs to someone else.",
        },
        DesignId::SetnxExpire => Pattern {
            seeds: concat!(seed!(1), "; ", seed!(3)),
            pattern: "the classic wrong acquire: SETNX, then EXPIRE as a second command \
                      (written that way for clients without the multi-argument SET). A \
                      crash between the two leaves a key with no expiry.",
        },
        DesignId::GetsetTimestamp => Pattern {
            seeds: seed!(1),
            pattern: "the second wrong acquire: the value is the expiry time computed by the \
                      client; a client that finds it in the past steals the lock with GETSET \
                      and checks the old value. The article names its flaws: clocks must \
                      agree, racing stealers overwrite each other's expiry, and the entry \
                      has no owner.",
        },
        DesignId::SetPxDel => Pattern {
            seeds: concat!(seed!(1), "; ", seed!(3)),
            pattern: "the wrong release: a plain DEL of the key, which removes the lock \
                      whoever holds it, including a client that took it after ours expired.",
        },
        DesignId::SetPxGetDel => Pattern {
            seeds: concat!(seed!(1), "; ", seed!(3)),
            pattern: "the second wrong release: GET the value, compare it with my token, then \
                      DEL, as two commands; the lock can expire and be taken between them.",
        },
        DesignId::LuaRelease => Pattern {
            seeds: concat!(seed!(1), "; ", seed!(3), "; ", seed!(4)),
            pattern: "the \"correct\" single-node lock: SET key token NX PX ttl, released by \
                      a Lua script that deletes the key only if it still holds my token. \
                      The articles leave open what happens when the holder is slower than \
                      the ttl, and on a replicated master.",
        },
        DesignId::Watchdog => Pattern {
            seeds: concat!(seed!(0), "; ", seed!(2)),
            pattern: "renewal: a background task (Redisson's watchdog) extends the lease \
                      every ttl/3 with a compare-and-pexpire script while the holder works.",
        },
        DesignId::Reentrant => Pattern {
            seeds: concat!(seed!(0), "; ", seed!(2)),
            pattern: "Redisson's reentrant lock: a hash whose field is the owner and whose \
                      value counts the holds, taken and released by Lua scripts with \
                      HINCRBY and PEXPIRE; the key is deleted when the count reaches zero.",
        },
        DesignId::Redlock => Pattern {
            seeds: concat!(seed!(2), "; ", seed!(0)),
            pattern: "Redlock: SET NX PX on N independent masters, a majority within the \
                      validity time wins; and the debate over it: a process pause or a \
                      clock jump longer than the validity lets two clients hold it.",
        },
        DesignId::Custom => return None,
    })
}

/// The patterns a scenario reproduces: its design's, then its faults' and options'.
pub fn patterns(scenario: &Scenario) -> Vec<Pattern> {
    let mut out: Vec<Pattern> = design_pattern(scenario.design).into_iter().collect();
    let faults = &scenario.faults;
    if faults[FaultKind::Failover] > 0 || scenario.wait_replicas > 0 {
        out.push(Pattern {
            seeds: concat!(seed!(0), "; ", seed!(2), "; ", seed!(3)),
            pattern: "the master-replica flaw: the master acknowledges the lock and dies \
                      before asynchronous replication reaches the replica; the promoted \
                      replica has no lock, and a second client takes it.",
        });
    }
    if (faults[FaultKind::Pause] > 0 || faults[FaultKind::ClockJump] > 0)
        && scenario.design != DesignId::Redlock
    {
        out.push(Pattern {
            seeds: seed!(2),
            pattern: "the process-pause critique from the Redlock debate: a stop-the-world \
                      pause (or a clock jump) longer than the lease lets the lock expire \
                      under a holder that then carries on as if it still held it.",
        });
    }
    if scenario.design.renews() && !scenario.watchdog() {
        out.push(Pattern {
            seeds: seed!(0),
            pattern: "Redisson's lock with an explicit leaseTime: lock(leaseTime, unit) \
                      schedules no watchdog, so the lease ends after leaseTime whatever the \
                      holder is doing.",
        });
    }
    if scenario.design.renews()
        && scenario.watchdog()
        && (faults[FaultKind::LostReply] > 0 || faults[FaultKind::Partition] > 0)
    {
        out.push(Pattern {
            seeds: seed!(0),
            pattern: "A watchdog that stops after a renewal that got no answer \
                      (renewal_on_error = \"stop\", the default; \"retry\" tries again): \
                      the holder works on under a lease nobody renews. Redisson's \
                      renewExpiration does so, logging \"Can't update lock ... \
                      expiration\", once its command layer has given the renewal up \
                      (it resends a command whose reply timed out, retryAttempts times).",
        });
    }
    if scenario.fencing != Fencing::Off {
        out.push(Pattern {
            seeds: seed!(2),
            pattern: "fencing tokens, the answer in that debate: an increasing number handed \
                      out with the lock and checked by the storage service, so a stale \
                      holder's access is rejected.",
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_design_names_an_existing_seed() {
        for d in DesignId::ALL {
            let p = design_pattern(d).expect("every built-in design has a pattern");
            for seed in p.seeds.split("; ") {
                assert!(SEEDS.contains(&seed), "{d}: {seed}");
            }
        }
    }
}
