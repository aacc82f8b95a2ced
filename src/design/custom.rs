//! `custom`: a lock a team brings, given as Redis commands and Lua scripts (a scenario's
//! `[lock]` table): an acquire, a release and an optional renewal, each one command or
//! one script, with the reply that means success.
//!
//! The machine knows nothing of what the steps do: it sends each step with the
//! placeholders filled in (`{key}`, `{token}`, `{ttl}`) and compares the reply with the
//! one the lock's author wrote down. Whether that is a safe lock is what the model
//! checker finds out, by running the very text (scripts in its Lua interpreter).

use std::sync::Arc;

use crate::command::{Command, Reply};
use crate::machine::{
    no_renewal, Answer, Denied, Grant, LockConfig, Millis, NoAnswer, Outcome, Phase, Protocol, Step,
};
use crate::script::{CustomScript, Script};

/// The placeholders a step may use, each in braces.
pub const PLACEHOLDERS: [&str; 3] = ["key", "token", "ttl"];

/// A custom lock: the steps and what their replies mean.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CustomLock {
    /// Takes the lock; `granted` is its success reply.
    pub acquire: LockStep,
    /// Gives it back; `released` is its success reply.
    pub release: LockStep,
    /// Extends the lease while held (`renewed`); `None`: the lease is never renewed.
    pub renew: Option<LockStep>,
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
    /// Every string of every step: the command words, or a script's keys and args.
    fn strings(&self) -> impl Iterator<Item = &String> {
        [
            Some(&self.acquire),
            Some(&self.release),
            self.renew.as_ref(),
        ]
        .into_iter()
        .flatten()
        .flat_map(|step| match &step.action {
            Action::Command(words) => words.iter().chain([].iter()),
            Action::Script { keys, args, .. } => keys.iter().chain(args.iter()),
        })
    }

    /// Why the driver cannot send these steps: an empty command, or a misspelt
    /// placeholder. (A scenario file is checked further: its scripts compile and its
    /// commands are ones the model implements.)
    pub fn check(&self) -> Result<(), String> {
        for (name, step) in [
            ("acquire", Some(&self.acquire)),
            ("release", Some(&self.release)),
            ("renew", self.renew.as_ref()),
        ] {
            if let Some(LockStep {
                action: Action::Command(words),
                ..
            }) = step
            {
                if words.is_empty() {
                    return Err(format!("the {name} step is an empty command"));
                }
            }
        }
        match self.strings().find_map(|s| misspelt_placeholder(s)) {
            Some(why) => Err(why),
            None => Ok(()),
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
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        self.phase = Phase::acquiring(token, now);
        Step::send(lock(cfg).acquire.request(cfg, token))
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
        match &self.phase {
            Phase::Acquiring { token, started, .. } => match answer {
                Ok(reply) if lock.acquire.success.matches(&reply) => {
                    let (token, end) = (token.clone(), cfg.lease_end(*started));
                    self.phase.hold(token, Some(end), 1)
                }
                Ok(_) => self
                    .phase
                    .idle(Outcome::Denied(Denied::Held { pttl: None })),
                // Maybe taken, maybe not: a lease the step set runs out by itself.
                Err(NoAnswer) => self
                    .phase
                    .idle(Outcome::Denied(Denied::Unavailable { node: 0 })),
            },
            Phase::Releasing { .. } => match answer {
                Ok(reply) if lock.release.success.matches(&reply) => {
                    self.phase.idle(Outcome::Released { holds_left: 0 })
                }
                Ok(_) => self.phase.idle(Outcome::NotHeld),
                Err(NoAnswer) => self.phase.idle(Outcome::Unavailable { node: 0 }),
            },
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
