//! A custom lock's step that does at run time what no lock table can mean: a script
//! that fails, a reply of a kind its success reply can never be (an error, an array, a
//! status other than the one written down), or something the model does not implement
//! (a command named only at run time, a time between two ticks). Any of these, on any
//! explored path, makes the scenario an error: its verdicts would be about a lock that
//! is not the one Redis runs, so it is never "holds" nor "vacuous".

use std::fmt;

use locklab::design::custom::{Action, CustomLock, LockStep, StepName};
use locklab::{Command, LockConfig, Reply, Script};

/// What went wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunFault {
    /// The step: `acquire` (`acquire[k]` of several), `release`, `renew` or `reenter`.
    pub step: StepName,
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

/// The step that sent `command`, with its name: a script by its name, a command by its
/// words (any token).
pub(crate) fn step_of<'a>(
    lock: &'a CustomLock,
    cfg: &LockConfig,
    command: &Command,
) -> Option<(StepName, &'a LockStep)> {
    lock.steps().find(|(_, step)| sent(step, cfg, command))
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
    let (step, lock_step) = step_of(lock, cfg, command)?;
    let key = step.success_key();
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
