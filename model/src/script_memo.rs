//! Runs of locklab's own scripts, remembered per search thread.
//!
//! The search runs the same few scripts millions of times on the same few node states:
//! Redlock releases every master with compare-and-delete, the reentrant design runs
//! every step as a script. A built-in script's run is a function of its `KEYS`, its
//! `ARGV`, the node's data and clock and the client it runs for (the ghost owner of what
//! it writes): its text keeps nothing in Lua globals and reads nothing but `KEYS`,
//! `ARGV` and `redis.call`, which each run sets afresh. So the first run of each such
//! input goes through the Lua interpreter ([`crate::lua::eval`]) and is kept, reply,
//! data after and what it displaced; a later run of the same input, compared in full
//! (not by hash), takes them back. A custom lock's script always runs: its text is the
//! scenario's, and its run may note what the memory does not keep (a fault, the line
//! it failed at). While a trace records the commands a
//! script calls ([`crate::lua::recording`]), every script runs.

use std::cell::RefCell;
use std::hash::{Hash, Hasher};

use locklab::{Reply, Script};
use rustc_hash::{FxHashMap, FxHasher};

use crate::redis::{Data, Exec};

/// One remembered run: its input and what it did.
struct Run {
    script: Script,
    keys: Vec<String>,
    args: Vec<String>,
    clock: i64,
    client: u8,
    before: Data,
    reply: Reply,
    after: Data,
    displaced: Vec<Option<u8>>,
}

/// Runs kept per thread before the memory starts over: a few hundred bytes each. The
/// designs' scripts see far fewer distinct inputs than this in any scenario.
const CAPACITY: usize = 1 << 16;

thread_local! {
    /// Remembered runs by the hash of their input (runs whose inputs collide share a slot).
    static RUNS: RefCell<(usize, FxHashMap<u64, Vec<Run>>)> = RefCell::default();
}

/// Runs `script` (a built-in one, else see the module documentation) with `keys` and
/// `args` against `exec`, as `EVAL` does: the reply, and `exec`'s data and effect as a
/// run leaves them.
pub(crate) fn eval(
    exec: &mut Exec<'_>,
    script: &Script,
    keys: &[String],
    args: &[String],
) -> Reply {
    if matches!(script, Script::Custom(_)) || crate::lua::is_recording() {
        return crate::lua::eval(exec, script.lua(), keys, args);
    }
    let (clock, client) = (exec.clock(), exec.client());
    let input = {
        let mut h = FxHasher::default();
        (script, keys, args, clock, client, exec.data()).hash(&mut h);
        h.finish()
    };
    let same = |r: &Run, data: &Data| {
        r.clock == clock
            && r.client == client
            && r.script == *script
            && r.keys == keys
            && r.args == args
            && r.before == *data
    };
    let kept = RUNS.with_borrow(|(_, runs)| {
        runs.get(&input)?
            .iter()
            .find(|r| same(r, exec.data()))
            .map(|r| (r.reply.clone(), r.after.clone(), r.displaced.clone()))
    });
    if let Some((reply, after, displaced)) = kept {
        *exec.data_mut() = after;
        exec.effect.displaced.extend(displaced);
        return reply;
    }
    let before = exec.data().clone();
    let displaced_before = exec.effect.displaced.len();
    let reply = crate::lua::eval(exec, script.lua(), keys, args);
    let run = Run {
        script: script.clone(),
        keys: keys.to_vec(),
        args: args.to_vec(),
        clock,
        client,
        before,
        reply: reply.clone(),
        after: exec.data().clone(),
        displaced: exec.effect.displaced[displaced_before..].to_vec(),
    };
    RUNS.with_borrow_mut(|(count, runs)| {
        if *count >= CAPACITY {
            runs.clear();
            *count = 0;
        }
        *count += 1;
        runs.entry(input).or_default().push(run);
    });
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::{Entry, Value};

    /// Every built-in script, on every node state of a small set, at clocks before and
    /// after its entries expire, for two clients: the remembered run (the second call,
    /// and a third after other inputs went by) answers and leaves the data and effect
    /// exactly as the interpreter does.
    #[test]
    fn a_remembered_run_is_the_run() {
        let entry = |value: Value, expires_at: Option<i64>, owner: Option<u8>| Entry {
            value,
            expires_at,
            owner,
        };
        let datas: Vec<Data> = vec![
            Data::default(),
            Data {
                entries: vec![("k".into(), entry(Value::Str("t1".into()), Some(5), Some(0)))],
            },
            Data {
                entries: vec![("k".into(), entry(Value::Str("t2".into()), None, Some(1)))],
            },
            Data {
                entries: vec![(
                    "k".into(),
                    entry(
                        Value::Hash(vec![("me".into(), "2".into())]),
                        Some(4),
                        Some(0),
                    ),
                )],
            },
            Data {
                entries: vec![(
                    "k".into(),
                    entry(
                        Value::Hash(vec![("you".into(), "1".into())]),
                        Some(9),
                        Some(1),
                    ),
                )],
            },
        ];
        let argvs: Vec<Vec<String>> = vec![
            vec!["t1".into(), "3".into()],
            vec!["t2".into(), "7".into()],
            vec!["5".into(), "me".into()],
            vec!["5".into(), "you".into()],
        ];
        let mut inputs = Vec::new();
        for script in Script::ALL {
            for data in &datas {
                for args in &argvs {
                    for clock in [0, 4, 6] {
                        for client in [0, 1] {
                            inputs.push((
                                script.clone(),
                                data.clone(),
                                args.clone(),
                                clock,
                                client,
                            ));
                        }
                    }
                }
            }
        }
        let keys = vec!["k".to_string()];
        let run = |remembered: bool, (script, data, args, clock, client): &(Script, Data, Vec<String>, i64, u8)| {
            let mut data = data.clone();
            let mut exec = Exec::new(&mut data, *clock, *client);
            exec.effect.displaced.push(Some(7));
            let reply = if remembered {
                eval(&mut exec, script, &keys, args)
            } else {
                crate::lua::eval(&mut exec, script.lua(), &keys, args)
            };
            let displaced = exec.effect.displaced.clone();
            (reply, data, displaced)
        };
        let mut changed = 0;
        for pass in 0..3 {
            for input in &inputs {
                let plain = run(false, input);
                assert_eq!(run(true, input), plain, "pass {pass}, {input:?}");
                changed += usize::from(plain.1 != input.1);
            }
        }
        assert!(changed > 100, "{changed} runs changed the data");
    }
}
