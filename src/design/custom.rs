//! `custom`: a lock a team brings, given as Redis commands and Lua scripts (a scenario's
//! `[lock]` table): an acquire (one step, or several sent one after another, each its own
//! round trip), a release, and optionally a renewal and a re-entry; each step one command
//! or one script, with the reply that means success.
//!
//! A lock with a re-entry step counts holds as Redisson's client does: a re-entry while
//! held sends that step with the held token and adds a hold; a release whose reply is
//! `released_partly` takes one hold off (the last one ends the hold), `released` ends it
//! whatever the count.
//!
//! The machine knows nothing of what the steps do: it sends each step with the
//! placeholders filled in (`{key}`, `{token}`, `{ttl}`) and compares the reply with the
//! one the lock's author wrote down. Whether that is a safe lock is what the model
//! checker finds out, by running the very text (scripts in its Lua interpreter).

use std::sync::Arc;

use crate::command::{Command, Reply};
use crate::machine::{
    no_renewal, Answer, Denied, Grant, LockConfig, Millis, NoAnswer, Phase, Protocol, Step,
};
use crate::script::{CustomScript, Script};
use crate::text::Text;

/// The placeholders a step may use, each in braces.
pub const PLACEHOLDERS: [&str; 3] = ["key", "token", "ttl"];

/// A custom lock: the steps and what their replies mean.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CustomLock {
    /// Takes the lock: the steps in order, each sent when the one before it succeeded
    /// (`granted`); the lock is held when the last one succeeds. At least one.
    pub acquire: Vec<LockStep>,
    /// Gives it back; `released` is its success reply.
    pub release: LockStep,
    /// The release's reply that took one hold of several off (`released_partly`); only a
    /// lock with a re-entry step has one.
    pub released_partly: Option<Expected>,
    /// Extends the lease while held (`renewed`); `None`: the lease is never renewed.
    pub renew: Option<LockStep>,
    /// Re-enters while held, with the held token (`reentered`); `None`: the lock is not
    /// reentrant.
    pub reenter: Option<LockStep>,
}

/// One step: what to send and the reply that means it worked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockStep {
    /// The command or script.
    pub action: Action,
    /// The success reply; any other reply is a failure.
    pub success: Expected,
}

/// What a step sends. Every string may hold placeholders.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// One command, word by word.
    Command(Vec<String>),
    /// A Lua script with its `KEYS` and `ARGV`.
    Script {
        /// The script, named after the step.
        script: CustomScript,
        /// `KEYS`.
        keys: Vec<String>,
        /// `ARGV`.
        args: Vec<String>,
    },
}

/// A success reply as a scenario writes it: a string, an integer or `"nil"`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expected {
    /// A status or bulk string (`"OK"` is the status reply `+OK`).
    Str(String),
    /// An integer.
    Int(i64),
    /// The nil reply (a script's `nil` or `false`).
    Nil,
}

impl Expected {
    /// Whether `reply` is this one.
    pub fn matches(&self, reply: &Reply) -> bool {
        match (self, reply) {
            (Expected::Str(s), Reply::Ok) => s == "OK",
            (Expected::Str(s), Reply::Bulk(b)) => s == b,
            (Expected::Int(i), Reply::Int(r)) => i == r,
            (Expected::Nil, Reply::Nil) => true,
            _ => false,
        }
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Str(s) => write!(f, "\"{s}\""),
            Expected::Int(i) => write!(f, "{i}"),
            Expected::Nil => f.write_str("nil"),
        }
    }
}

/// Why `text` cannot be filled in: its first `{word}` that is not one of
/// [`PLACEHOLDERS`], named in a message. `None` when every placeholder is known.
pub fn misspelt_placeholder(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}')?;
        let word = &rest[open + 1..open + close];
        if !PLACEHOLDERS.contains(&word) {
            return Some(format!(
                "unknown placeholder `{{{word}}}` in \"{text}\"; placeholders: {}",
                PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
            ));
        }
        rest = &rest[open + close + 1..];
    }
    None
}

impl CustomLock {
    /// A lock of a one-step acquire and a release, neither renewed nor reentrant.
    pub fn new(acquire: LockStep, release: LockStep) -> Self {
        CustomLock {
            acquire: vec![acquire],
            release,
            released_partly: None,
            renew: None,
            reenter: None,
        }
    }

    /// The acquire with `step` after its steps so far, sent once they succeeded (its own
    /// round trip, as `SETNX` then `PEXPIRE`).
    #[must_use]
    pub fn acquire_then(mut self, step: LockStep) -> Self {
        self.acquire.push(step);
        self
    }

    /// The lease renewed by `step` while held.
    #[must_use]
    pub fn renewed_by(mut self, step: LockStep) -> Self {
        self.renew = Some(step);
        self
    }

    /// Reentrant: a holder re-enters with `step`, and a release answering
    /// `released_partly` took one hold of several off.
    #[must_use]
    pub fn reentered_by(mut self, step: LockStep, released_partly: Expected) -> Self {
        self.reenter = Some(step);
        self.released_partly = Some(released_partly);
        self
    }

    /// Every string of every step: the command words, or a script's keys and args.
    fn strings(&self) -> impl Iterator<Item = &String> {
        self.steps().flat_map(|(_, step)| match &step.action {
            Action::Command(words) => words.iter().chain([].iter()),
            Action::Script { keys, args, .. } => keys.iter().chain(args.iter()),
        })
    }

    /// Why the driver cannot send these steps: an empty command, or a misspelt
    /// placeholder. (A scenario file is checked further: its scripts compile and its
    /// commands are ones the model implements.)
    pub fn check(&self) -> Result<(), String> {
        if self.acquire.is_empty() {
            return Err("the acquire has no step".into());
        }
        if u8::try_from(self.acquire.len()).is_err() {
            return Err(format!(
                "the acquire has {} steps; at most 255",
                self.acquire.len()
            ));
        }
        for (name, step) in self.steps() {
            if matches!(&step.action, Action::Command(words) if words.is_empty()) {
                return Err(format!("the {name} step is an empty command"));
            }
        }
        if self.released_partly.is_some() && self.reenter.is_none() {
            return Err(
                "released_partly needs a re-entry step: without one a hold is never \
                        one of several"
                    .into(),
            );
        }
        if self.released_partly.as_ref() == Some(&self.release.success) {
            return Err(format!(
                "released_partly and released are both {}: the release's reply must tell a \
                 partial release from the last one",
                self.release.success
            ));
        }
        match self.strings().find_map(|s| misspelt_placeholder(s)) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Every step with its name (`acquire`, `acquire[2]` for the second of several,
    /// `release`, `renew`, `reenter`), in that order.
    pub fn steps(&self) -> impl Iterator<Item = (StepName, &LockStep)> {
        let several = self.acquire.len() > 1;
        let acquire = self.acquire.iter().enumerate().map(move |(i, step)| {
            let index = several.then(|| u8::try_from(i + 1).unwrap_or(u8::MAX));
            (StepName::Acquire(index), step)
        });
        acquire
            .chain([(StepName::Release, &self.release)])
            .chain(self.renew.iter().map(|s| (StepName::Renew, s)))
            .chain(self.reenter.iter().map(|s| (StepName::Reenter, s)))
    }
}

/// The name of one step of a custom lock, as its `[lock]` table calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StepName {
    /// The acquire; `Some(k)`: its k-th step (from 1) of several.
    Acquire(Option<u8>),
    /// The release.
    Release,
    /// The renewal.
    Renew,
    /// The re-entry.
    Reenter,
}

impl StepName {
    /// The key of the step's success reply: `granted`, `released`, `renewed`,
    /// `reentered`.
    pub fn success_key(self) -> &'static str {
        match self {
            StepName::Acquire(_) => "granted",
            StepName::Release => "released",
            StepName::Renew => "renewed",
            StepName::Reenter => "reentered",
        }
    }
}

impl std::fmt::Display for StepName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepName::Acquire(None) => f.write_str("acquire"),
            StepName::Acquire(Some(k)) => write!(f, "acquire[{k}]"),
            StepName::Release => f.write_str("release"),
            StepName::Renew => f.write_str("renew"),
            StepName::Reenter => f.write_str("reenter"),
        }
    }
}

impl LockStep {
    /// A step that sends one command, e.g. `["SET", "{key}", "{token}", "NX", "PX",
    /// "{ttl}"]`, and succeeds on `success`.
    pub fn command<S: Into<String>>(
        words: impl IntoIterator<Item = S>,
        success: Expected,
    ) -> LockStep {
        LockStep {
            action: Action::Command(words.into_iter().map(Into::into).collect()),
            success,
        }
    }

    /// A step that runs a Lua script (named `name` in traces) with its `KEYS` and
    /// `ARGV`, and succeeds on `success`.
    pub fn script<K: Into<String>, A: Into<String>>(
        name: &str,
        text: &str,
        keys: impl IntoIterator<Item = K>,
        args: impl IntoIterator<Item = A>,
        success: Expected,
    ) -> LockStep {
        LockStep {
            action: Action::Script {
                script: CustomScript {
                    name: name.into(),
                    text: text.into(),
                },
                keys: keys.into_iter().map(Into::into).collect(),
                args: args.into_iter().map(Into::into).collect(),
            },
            success,
        }
    }
}

/// `text` with each placeholder replaced; `{ttl}` in milliseconds, as Redis reads it.
fn fill(text: &str, cfg: &LockConfig, token: &str) -> String {
    if !text.contains('{') {
        return text.to_string();
    }
    text.replace("{key}", &cfg.key)
        .replace("{token}", token)
        .replace("{ttl}", &cfg.ttl.saturating_mul(cfg.unit_ms).to_string())
}

impl LockStep {
    /// The command this step sends for the holder of `token`.
    pub fn request(&self, cfg: &LockConfig, token: &str) -> Command {
        let fill_all = |v: &[String]| v.iter().map(|s| fill(s, cfg, token)).collect();
        match &self.action {
            Action::Command(words) => Command::Call {
                args: fill_all(words),
            },
            Action::Script { script, keys, args } => Command::Eval {
                script: Script::Custom(script.clone()),
                keys: fill_all(keys),
                args: fill_all(args),
            },
        }
    }
}

/// The machine of a custom lock.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Custom {
    pub(crate) phase: Phase,
}

fn lock(cfg: &LockConfig) -> &Arc<CustomLock> {
    cfg.custom
        .as_ref()
        .expect("design `custom` runs with LockConfig::custom set")
}

impl Protocol for Custom {
    /// While held, a lock with a re-entry step re-enters with the held token (`token` is
    /// ignored); otherwise the acquire's first step.
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        let lock = lock(cfg);
        let outer = self
            .phase
            .grant()
            .filter(|_| lock.reenter.is_some())
            .cloned();
        let (token, first) = match (&outer, &lock.reenter) {
            (Some(grant), Some(reenter)) => (grant.token.clone(), reenter),
            _ => (Text::new(token), &lock.acquire[0]),
        };
        let step = Step::send(first.request(cfg, &token));
        self.phase = Phase::Acquiring {
            token,
            started: now,
            step: 0,
            seen: None,
            outer,
        };
        step
    }

    fn release(&mut self, cfg: &LockConfig, _now: Millis) -> Step {
        self.phase
            .start_release(|g| lock(cfg).release.request(cfg, &g.token))
    }

    fn renew(&mut self, cfg: &LockConfig, now: Millis) -> Step {
        match &lock(cfg).renew {
            Some(renew) => self
                .phase
                .start_renew(now, |g| renew.request(cfg, &g.token)),
            None => no_renewal(),
        }
    }

    fn on_answer(&mut self, cfg: &LockConfig, _node: usize, answer: Answer, _now: Millis) -> Step {
        let lock = lock(cfg);
        match &mut self.phase {
            Phase::Acquiring {
                token,
                started,
                step,
                outer,
                ..
            } => {
                let steps = match (&*outer, &lock.reenter) {
                    (Some(_), Some(reenter)) => std::slice::from_ref(reenter),
                    _ => &lock.acquire[..],
                };
                let denied = match answer {
                    Ok(reply) if steps[usize::from(*step)].success.matches(&reply) => {
                        let next = usize::from(*step) + 1;
                        if let Some(next_step) = steps.get(next) {
                            // The next step of a multi-step acquire: its own round trip.
                            *step += 1;
                            return Step::send(next_step.request(cfg, token));
                        }
                        let holds = outer.as_ref().map_or(0, |g| g.holds) + 1;
                        let (token, end) = (token.clone(), cfg.lease_end(*started));
                        return self.phase.hold(token, Some(end), holds);
                    }
                    Ok(_) => Denied::Held { pttl: None },
                    // Maybe taken, maybe not: a lease the step set runs out by itself.
                    Err(NoAnswer) => Denied::Unavailable { node: 0 },
                };
                self.phase.deny(denied)
            }
            Phase::Releasing { .. } => {
                let partly = lock.released_partly.as_ref();
                self.phase.finish_counted_release(
                    answer,
                    |reply| lock.release.success.matches(reply),
                    |reply| partly.is_some_and(|p| p.matches(reply)),
                )
            }
            Phase::Renewing { .. } => {
                let renewed = lock.renew.as_ref().map(|r| &r.success);
                self.phase.finish_renew_when(cfg, answer, |reply| {
                    renewed.is_some_and(|success| success.matches(reply))
                })
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
