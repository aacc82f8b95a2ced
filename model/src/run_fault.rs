//! A custom lock's step that does at run time what no lock table can mean: a script
//! that fails, a reply of a kind its success reply can never be (an error, an array, a
//! status other than the one written down), or something the model does not implement
//! (a command named only at run time, a time between two ticks). Any of these, on any
//! explored path, makes the scenario an error: its verdicts would be about a lock that
//! is not the one Redis runs, so it is never "holds" nor "vacuous".

use std::fmt;

use locklab::design::custom::{Action, CustomLock, LockStep};
use locklab::{Command, LockConfig, Reply, Script};

/// What went wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunFault {
    /// The step: `acquire`, `release` or `renew`.
    pub step: &'static str,
    /// The script line it failed at, when a script failed.
    pub line: Option<usize>,
    /// What happened (the reply or error, or what the model does not implement).
    pub what: String,
    /// The success reply the lock table wrote, as its key and value
    /// (`granted = 1`); `None` for something unmodelled.
    pub expected: Option<String>,
}

impl fmt::Display for RunFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key `lock.{}`: ", self.step)?;
        if let Some(line) = self.line {
            write!(f, "line {line} of the script: ")?;
        }
        f.write_str(&self.what)?;
        if let Some(expected) = &self.expected {
            write!(
                f,
                "; the [lock] table expects {expected} for success and another reply for failure"
            )?;
        }
        Ok(())
    }
}

/// The success key of each step.
const STEPS: [(&str, &str); 3] = [
    ("acquire", "granted"),
    ("release", "released"),
    ("renew", "renewed"),
];

/// The step that sent `command`, with its name and success key: a script by its name,
/// a command by its words (any token).
fn step_of<'a>(
    lock: &'a CustomLock,
    cfg: &LockConfig,
    command: &Command,
) -> Option<(&'static str, &'static str, &'a LockStep)> {
    let steps = [
        Some(&lock.acquire),
        Some(&lock.release),
        lock.renew.as_ref(),
    ];
    let found = steps
        .into_iter()
        .zip(STEPS)
        .find(|(step, _)| step.is_some_and(|s| sent(s, cfg, command)))?;
    Some((found.1 .0, found.1 .1, found.0?))
}

/// Whether `step` sends `command` for some token.
fn sent(step: &LockStep, cfg: &LockConfig, command: &Command) -> bool {
    match (&step.action, command) {
        (Action::Script { script, .. }, Command::Eval { script: sent, .. }) => {
            matches!(sent, Script::Custom(s) if s == script)
        }
        (Action::Command(words), Command::Call { args }) => {
            let Command::Call { args: filled } = step.request(cfg, "") else {
                return false;
            };
            words.len() == args.len()
                && filled
                    .iter()
                    .zip(args)
                    .zip(words)
                    .all(|((filled, arg), template)| template.contains("{token}") || filled == arg)
        }
        _ => false,
    }
}

/// The fault of a custom step's run, if it had one: `reply` is what Redis answered,
/// `unmodelled` and `line` what the abstract Redis noted while running it.
pub fn judge(
    cfg: &LockConfig,
    command: &Command,
    reply: &Reply,
    unmodelled: Option<&str>,
    line: Option<usize>,
) -> Option<RunFault> {
    let suspect = matches!(reply, Reply::Error(_) | Reply::Array(_) | Reply::Ok);
    if unmodelled.is_none() && !suspect {
        return None;
    }
    let lock = cfg.custom.as_ref()?;
    let (step, key, lock_step) = step_of(lock, cfg, command)?;
    if let Some(what) = unmodelled {
        return Some(RunFault {
            step,
            line,
            what: format!("it uses {what}"),
            expected: None,
        });
    }
    let what = match reply {
        Reply::Error(e) => format!("it got the error reply `{e}`"),
        Reply::Array(_) => format!("it got an array reply ({reply})"),
        Reply::Ok if !lock_step.success.matches(reply) => "it got the status reply OK".into(),
        _ => return None,
    };
    Some(RunFault {
        step,
        line,
        what,
        expected: Some(format!("{key} = {}", lock_step.success)),
    })
}
