//! `redlock`: the lock on N independent masters. Acquire sends `SET key token NX PX ttl`
//! to every master at once; it holds when a majority (N/2+1) granted it and the validity
//! left, ttl − elapsed − drift, is positive, or longer than the holder needs
//! ([`LockConfig::min_validity`]). Otherwise it releases every master (partial grants
//! included) before reporting the failure. Release and extend go to all masters.
//!
//! Safe against crashed or unreachable minorities, given bounded pauses, bounded clock
//! drift and persistence. Broken by a holder pause longer than the validity, by a clock
//! jump on a master (its key expires early), and by a master restarting empty.

use crate::command::{Command, Reply};
use crate::design::lua_release::{compare_and_delete, compare_and_pexpire};
use crate::machine::{
    shifted, Answer, Denied, Grant, LockConfig, Millis, Outcome, Protocol, Request, Step,
};
use crate::text::Text;

/// The denial a machine keeps in place of the one it will report, once forgotten
/// ([`Redlock::forget_reported_values`]).
const FORGOTTEN_DENIAL: Denied = Denied::NoQuorum { granted: 0 };

/// A set of master indexes (at most 16 masters).
type Nodes = u16;

fn all(n: usize) -> Nodes {
    Nodes::try_from((1u32 << n) - 1).expect("at most 16 masters")
}

/// The set with master `i` renamed to `perm[i]`.
fn permute(set: Nodes, perm: &[usize]) -> Nodes {
    perm.iter()
        .enumerate()
        .filter(|(old, _)| set & (1 << old) != 0)
        .fold(0, |acc, (_, &new)| acc | (1 << new))
}

/// Redlock over N masters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Redlock {
    masters: u8,
    phase: Phase,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    /// `pending`: masters not yet answered; `granted`: how many said OK (only the
    /// count decides, so which ones is not kept: two machines that differ only there
    /// would answer every later call alike).
    Acquiring {
        token: Text,
        started: Millis,
        pending: Nodes,
        granted: u8,
    },
    Held(Grant),
    /// Releasing everywhere; `why` is set when this undoes a failed acquire;
    /// `deleted`: some master deleted the key (the outcome reads no more than that).
    Releasing {
        grant: Grant,
        pending: Nodes,
        deleted: bool,
        why: Option<Denied>,
    },
    /// `extended`: how many masters extended the lease.
    Extending {
        grant: Grant,
        started: Millis,
        pending: Nodes,
        extended: u8,
    },
}

impl Redlock {
    /// An idle machine for `masters` masters.
    pub fn new(masters: usize) -> Self {
        assert!(
            (1..=16).contains(&masters),
            "redlock supports 1 to 16 masters"
        );
        Redlock {
            masters: u8::try_from(masters).expect("at most 16 masters"),
            phase: Phase::Idle,
        }
    }

    fn n(&self) -> usize {
        self.masters as usize
    }

    /// The majority: N/2 + 1.
    pub fn quorum(&self) -> usize {
        self.n() / 2 + 1
    }

    fn fan_out(&self, command: impl Fn() -> Command) -> Vec<Request> {
        (0..self.n())
            .map(|node| Request {
                node,
                command: command(),
            })
            .collect()
    }

    /// Rename master `i` to `perm[i]` in the per-master bookkeeping. The masters are
    /// independent and interchangeable, so a renamed machine behaves the same towards the
    /// renamed masters (the model merges such states).
    pub fn permute_nodes(&mut self, perm: &[usize]) {
        assert_eq!(perm.len(), self.n(), "a permutation of every master");
        match &mut self.phase {
            Phase::Idle | Phase::Held(_) => {}
            Phase::Acquiring { pending, .. }
            | Phase::Releasing { pending, .. }
            | Phase::Extending { pending, .. } => *pending = permute(*pending, perm),
        }
    }

    /// Whether renaming master `a` to `b` and `b` to `a` leaves this machine as it is:
    /// its bookkeeping has both in every set or neither. (The same answer as permuting
    /// a copy and comparing, without the copy: symmetry asks this for every pair of
    /// alike masters of every state.)
    pub fn swap_keeps(&self, a: usize, b: usize) -> bool {
        let alike = |set: Nodes| (set >> a) & 1 == (set >> b) & 1;
        match &self.phase {
            Phase::Idle | Phase::Held(_) => true,
            Phase::Acquiring { pending, .. }
            | Phase::Releasing { pending, .. }
            | Phase::Extending { pending, .. } => alike(*pending),
        }
    }

    /// Zero the lease end of a held or released grant, and set what a release will
    /// report once every master answered (whether one deleted the key; the detail of
    /// the denial, after a failed acquire) to one fixed value (see
    /// [`crate::LockMachine::forget_reported_values`]). The start of an acquire or an
    /// extension stays: the validity check reads it.
    pub(crate) fn forget_reported_values(&mut self) {
        match &mut self.phase {
            Phase::Releasing {
                grant,
                deleted,
                why,
                ..
            } => {
                grant.forget_lease_end();
                *deleted = false;
                if let Some(why) = why {
                    *why = FORGOTTEN_DENIAL;
                }
            }
            Phase::Held(grant) | Phase::Extending { grant, .. } => grant.forget_lease_end(),
            Phase::Idle | Phase::Acquiring { .. } => {}
        }
    }

    /// Whether every answer it still waits for is read only for what it will report:
    /// a release's (see [`crate::LockMachine::awaits_only_reported`]).
    pub(crate) fn awaits_only_reported(&self) -> bool {
        matches!(self.phase, Phase::Releasing { .. })
    }

    /// Move every time this machine keeps (see [`crate::LockMachine::shift_times`]).
    pub(crate) fn shift_times(&mut self, by: Millis, floor: Millis) {
        match &mut self.phase {
            Phase::Idle => {}
            Phase::Acquiring { started, .. } => *started = shifted(*started, by, floor),
            Phase::Held(grant) | Phase::Releasing { grant, .. } => {
                grant.shift_lease_end(by, floor);
            }
            Phase::Extending { grant, started, .. } => {
                grant.shift_lease_end(by, floor);
                *started = shifted(*started, by, floor);
            }
        }
    }

    /// Whether an answer from `node` would only be recorded: the operation in flight
    /// waits for another master as well, so the answer sends nothing, reports nothing
    /// and reads no clock, whatever it says and whenever it comes.
    pub(crate) fn records_only(&self, node: usize) -> bool {
        let pending = match &self.phase {
            Phase::Acquiring { pending, .. }
            | Phase::Releasing { pending, .. }
            | Phase::Extending { pending, .. } => *pending,
            Phase::Idle | Phase::Held(_) => return false,
        };
        let bit: Nodes = 1 << node;
        pending & bit != 0 && pending & !bit != 0
    }

    fn release_all(&mut self, cfg: &LockConfig, grant: Grant, why: Option<Denied>) -> Step {
        let sends = self.fan_out(|| compare_and_delete(cfg, &grant));
        self.phase = Phase::Releasing {
            grant,
            pending: all(self.n()),
            deleted: false,
            why,
        };
        Step {
            sends,
            outcome: None,
        }
    }
}

impl Default for Redlock {
    fn default() -> Self {
        Redlock::new(1)
    }
}

impl Protocol for Redlock {
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        let sends = self.fan_out(|| Command::SetNxPx {
            key: cfg.key.clone(),
            value: token.to_string(),
            px: cfg.ttl,
        });
        self.phase = Phase::Acquiring {
            token: Text::new(token),
            started: now,
            pending: all(self.n()),
            granted: 0,
        };
        Step {
            sends,
            outcome: None,
        }
    }

    fn release(&mut self, cfg: &LockConfig, _now: Millis) -> Step {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Held(grant) => self.release_all(cfg, grant, None),
            other => {
                self.phase = other;
                Step::done(Outcome::NotHeld)
            }
        }
    }

    fn renew(&mut self, cfg: &LockConfig, now: Millis) -> Step {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Held(grant) => {
                let sends = self.fan_out(|| compare_and_pexpire(cfg, &grant));
                self.phase = Phase::Extending {
                    grant,
                    started: now,
                    pending: all(self.n()),
                    extended: 0,
                };
                Step {
                    sends,
                    outcome: None,
                }
            }
            other => {
                self.phase = other;
                Step::done(Outcome::NotHeld)
            }
        }
    }

    fn on_answer(&mut self, cfg: &LockConfig, node: usize, answer: Answer, now: Millis) -> Step {
        let bit: Nodes = 1 << node;
        let quorum = self.quorum();
        match &mut self.phase {
            Phase::Acquiring {
                token,
                started,
                pending,
                granted,
            } if *pending & bit != 0 => {
                *pending &= !bit;
                if answer == Ok(Reply::Ok) {
                    *granted += 1;
                }
                if *pending != 0 {
                    return Step::default();
                }
                let lease_end = cfg.lease_end(*started);
                let count = usize::from(*granted);
                let grant = Grant {
                    token: token.clone(),
                    lease_end: Some(lease_end),
                    fence: None,
                    holds: 1,
                };
                let needed = Millis::try_from(cfg.min_validity).unwrap_or(Millis::MAX);
                if count >= quorum && lease_end.saturating_sub(now) > needed {
                    self.phase = Phase::Held(grant.clone());
                    Step::done(Outcome::Acquired(grant))
                } else {
                    let why = if count >= quorum {
                        Denied::NoValidity { granted: count }
                    } else {
                        Denied::NoQuorum { granted: count }
                    };
                    self.release_all(cfg, grant, Some(why))
                }
            }
            Phase::Releasing {
                pending,
                deleted,
                why,
                ..
            } if *pending & bit != 0 => {
                *pending &= !bit;
                if answer == Ok(Reply::Int(1)) {
                    *deleted = true;
                }
                if *pending != 0 {
                    return Step::default();
                }
                let outcome = match (why.take(), *deleted) {
                    (Some(why), _) => Outcome::Denied(why),
                    (None, false) => Outcome::NotHeld,
                    (None, true) => Outcome::Released { holds_left: 0 },
                };
                self.phase = Phase::Idle;
                Step::done(outcome)
            }
            Phase::Extending {
                grant,
                started,
                pending,
                extended,
            } if *pending & bit != 0 => {
                *pending &= !bit;
                if answer == Ok(Reply::Int(1)) {
                    *extended += 1;
                }
                if *pending != 0 {
                    return Step::default();
                }
                let lease_end = cfg.lease_end(*started);
                if usize::from(*extended) >= quorum && lease_end > now {
                    let grant = Grant {
                        lease_end: Some(lease_end),
                        ..grant.clone()
                    };
                    self.phase = Phase::Held(grant);
                    Step::done(Outcome::Extended { lease_end })
                } else {
                    self.phase = Phase::Idle;
                    Step::done(Outcome::NotHeld)
                }
            }
            _ => Step::default(),
        }
    }

    fn busy(&self) -> bool {
        !matches!(self.phase, Phase::Idle | Phase::Held(_))
    }

    fn grant(&self) -> Option<&Grant> {
        match &self.phase {
            Phase::Held(g) => Some(g),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design_id::DesignId;
    use crate::machine::NoAnswer;

    /// An acquire holds only with more validity left than the holder needs: with a
    /// 100 ms ttl, 2 ms drift and 40 ms elapsed, 58 ms are left: enough for 57, not 58.
    #[test]
    fn an_acquire_needs_more_validity_than_min_validity() {
        let acquire = |needed: u64| {
            let mut cfg = LockConfig::new(DesignId::Redlock, "k", 100);
            cfg.masters = 1;
            cfg.drift_ppm = 0;
            cfg.min_validity = needed;
            let mut m = Redlock::new(1);
            m.acquire(&cfg, 0, "t1");
            m.on_answer(&cfg, 0, Ok(Reply::Ok), 40).outcome
        };
        assert!(matches!(acquire(57), Some(Outcome::Acquired(_))));
        assert_eq!(acquire(58), None, "the grant is given back first");
        let mut cfg = LockConfig::new(DesignId::Redlock, "k", 100);
        (cfg.masters, cfg.drift_ppm, cfg.min_validity) = (1, 0, 58);
        let mut m = Redlock::new(1);
        m.acquire(&cfg, 0, "t1");
        let undo = m.on_answer(&cfg, 0, Ok(Reply::Ok), 40);
        assert_eq!(undo.sends.len(), 1, "the grant is released");
        let done = m.on_answer(&cfg, 0, Ok(Reply::Int(1)), 41);
        assert_eq!(
            done.outcome,
            Some(Outcome::Denied(Denied::NoValidity { granted: 1 }))
        );
    }

    /// A machine with masters renamed answers the renamed masters as the original answers
    /// the original ones.
    #[test]
    fn renamed_masters_behave_the_same() {
        let mut cfg = LockConfig::new(DesignId::Redlock, "k", 100);
        cfg.masters = 3;
        let perm = [2, 0, 1];
        let mut a = Redlock::new(3);
        a.acquire(&cfg, 0, "t1");
        // Master 0 grants, master 1 refuses; master 2 still pending.
        a.on_answer(&cfg, 0, Ok(Reply::Ok), 1);
        a.on_answer(&cfg, 1, Ok(Reply::Nil), 1);
        let mut b = a.clone();
        b.permute_nodes(&perm);
        assert_ne!(a, b);
        // Master 2 (renamed 1) does not answer: one grant of three, no quorum either way.
        let sa = a.on_answer(&cfg, 2, Err(NoAnswer), 2);
        assert_eq!(b.on_answer(&cfg, 2, Err(NoAnswer), 2), Step::default());
        let sb = b.on_answer(&cfg, perm[2], Err(NoAnswer), 2);
        assert_eq!(sa.sends.len(), 3);
        assert_eq!(sa, sb);
        // Renaming back gives the original.
        let mut c = b.clone();
        c.permute_nodes(&[1, 2, 0]);
        a.permute_nodes(&[0, 1, 2]);
        assert_eq!(a, c);
    }

    /// A release reads its answers only for what it reports: machines that read
    /// different answers are equal once that is forgotten, and end alike (the same
    /// requests; a denial both, after a failed acquire; released or not held, after a
    /// hold).
    #[test]
    fn a_release_reads_its_answers_only_for_its_report() {
        let mut cfg = LockConfig::new(DesignId::Redlock, "k", 100);
        cfg.masters = 3;
        // A failed acquire (one grant of three) releasing everywhere, and a release of
        // a lock held.
        let mut denied = Redlock::new(3);
        denied.acquire(&cfg, 0, "t1");
        denied.on_answer(&cfg, 0, Ok(Reply::Ok), 1);
        denied.on_answer(&cfg, 1, Ok(Reply::Nil), 1);
        denied.on_answer(&cfg, 2, Ok(Reply::Nil), 1);
        let mut held = Redlock::new(3);
        held.acquire(&cfg, 0, "t2");
        for node in 0..3 {
            held.on_answer(&cfg, node, Ok(Reply::Ok), 1);
        }
        held.release(&cfg, 2);
        fn is_denial(o: &Outcome) -> bool {
            matches!(o, Outcome::Denied(_))
        }
        fn is_release(o: &Outcome) -> bool {
            matches!(o, Outcome::Released { .. } | Outcome::NotHeld)
        }
        let cases = [
            (denied, is_denial as fn(&Outcome) -> bool),
            (held, is_release),
        ];
        for (machine, ends_as) in cases {
            assert!(machine.awaits_only_reported());
            let mut a = machine.clone();
            let mut b = machine;
            let mut ends = Vec::new();
            for node in 0..3 {
                let sa = a.on_answer(&cfg, node, Ok(Reply::Int(1)), 3);
                let sb = b.on_answer(&cfg, node, Ok(Reply::Int(0)), 3);
                assert_eq!(sa.sends, sb.sends);
                ends.push((sa.outcome, sb.outcome));
                a.forget_reported_values();
                b.forget_reported_values();
                assert_eq!(a, b, "after the answer of master {node}");
            }
            let (Some(oa), Some(ob)) = ends.pop().expect("three answers") else {
                panic!("the last answer ends the release");
            };
            assert!(ends_as(&oa) && ends_as(&ob), "{oa:?}, {ob:?}");
            assert!(!a.awaits_only_reported());
        }
    }

    /// `swap_keeps` answers what swapping two masters in a copy and comparing answers,
    /// in every phase, for every pair.
    #[test]
    fn swap_keeps_is_swap_and_compare() {
        let mut cfg = LockConfig::new(DesignId::Redlock, "k", 100);
        cfg.masters = 4;
        let mut machines = vec![Redlock::new(4)];
        let mut m = Redlock::new(4);
        m.acquire(&cfg, 0, "t1");
        machines.push(m.clone());
        m.on_answer(&cfg, 0, Ok(Reply::Ok), 1);
        machines.push(m.clone());
        m.on_answer(&cfg, 2, Ok(Reply::Nil), 1);
        machines.push(m.clone());
        m.on_answer(&cfg, 1, Ok(Reply::Ok), 1);
        m.on_answer(&cfg, 3, Ok(Reply::Ok), 1);
        assert!(matches!(m.phase, Phase::Held(_)));
        machines.push(m.clone());
        let mut extending = m.clone();
        extending.renew(&cfg, 2);
        extending.on_answer(&cfg, 3, Ok(Reply::Int(1)), 2);
        machines.push(extending);
        m.release(&cfg, 3);
        m.on_answer(&cfg, 1, Ok(Reply::Int(1)), 3);
        machines.push(m);
        let mut differ = 0;
        for m in &machines {
            for a in 0..4 {
                for b in 0..4 {
                    let mut perm: Vec<usize> = (0..4).collect();
                    perm.swap(a, b);
                    let mut swapped = m.clone();
                    swapped.permute_nodes(&perm);
                    assert_eq!(m.swap_keeps(a, b), swapped == *m, "{m:?} {a} {b}");
                    differ += usize::from(!m.swap_keeps(a, b));
                }
            }
        }
        assert!(differ > 10, "{differ} pairs told apart");
    }
}
