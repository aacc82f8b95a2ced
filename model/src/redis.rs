//! The abstract Redis node: strings, hashes, INCR, GETSET, TTL on the node's logical
//! clock, and scripts, whose Lua text runs in the model's interpreter ([`crate::lua`]).
//!
//! Each entry remembers which client last wrote it (`owner`): ghost state, invisible to
//! the designs, that the `owner_only_release` property reads.

use locklab::{Command, Reply};

use crate::clone_in_place::clone_in_place;

pub use locklab::Text;

/// A value: a string or a hash.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Value {
    /// A string.
    Str(Text),
    /// A hash (field, value), in the order the fields were added, as Redis's small
    /// hashes keep them (`HGETALL` answers in that order).
    Hash(Vec<(Text, Text)>),
    /// A list, head first (a lock's signal list for its waiters, as python-redis-lock
    /// keeps one).
    List(Vec<Text>),
}

/// One key's entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Absolute expiry on this node's clock, if any (ticks).
    pub expires_at: Option<i64>,
    /// Ghost: the client whose command last wrote the entry.
    pub owner: Option<u8>,
}

/// A node's data at one moment of its clock.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct Data {
    /// Entries sorted by key.
    pub entries: Vec<(Text, Entry)>,
}

// The search builds successors in place ([`crate::clone_in_place`]).
clone_in_place!(Data {
    copy: [],
    keep: [entries],
});

impl Data {
    /// The entry under `key`.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, e)| e)
    }

    fn entry_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, e)| e)
    }

    fn put(&mut self, key: &str, entry: Entry) {
        match self.entries.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
            Ok(i) => self.entries[i].1 = entry,
            Err(i) => self.entries.insert(i, (key.into(), entry)),
        }
    }

    fn remove(&mut self, key: &str) -> Option<Entry> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(i).1)
    }

    /// Whether [`Data::expire`] at `clock` would remove an entry.
    pub fn expires_by(&self, clock: i64) -> bool {
        self.entries
            .iter()
            .any(|(_, e)| e.expires_at.is_some_and(|at| at <= clock))
    }

    /// Drop every entry whose expiry is at or before `clock` (the node's clock).
    pub fn expire(&mut self, clock: i64) {
        self.entries
            .retain(|(_, e)| e.expires_at.is_none_or(|at| at > clock));
    }
}

/// What a command did to the lock key, for the ghost checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effect {
    /// Entries of the lock key (their owners) that the command deleted, overwrote or
    /// changed the expiry of ([`Exec::watching`]: of every key when no lock key is set).
    pub displaced: Vec<Option<u8>>,
}

/// Runs commands against [`Data`] at a given node clock, on behalf of a client.
///
/// The clock counts ticks; commands read and answer times in Redis's units
/// (milliseconds for `PX`, `PEXPIRE`, `PTTL`, seconds for `EX`, `EXPIRE`, `TTL`) at
/// `tick_ms` milliseconds a tick ([`Exec::with_tick_ms`]; 1 unless set). A time that is
/// not a whole number of ticks cannot be modelled: it sets [`Exec::unmodelled`].
pub struct Exec<'a> {
    data: &'a mut Data,
    clock: i64,
    client: u8,
    tick_ms: u64,
    /// The lock key, the one key whose displaced entries count ([`Exec::watching`]).
    lock_key: Option<&'a str>,
    /// What the command displaced.
    pub effect: Effect,
    /// Set when a command or script did something the model does not implement (a
    /// command named at run time it does not know, a time between two ticks): the run
    /// is no behaviour of Redis the model knows, and its scenario is in error.
    pub unmodelled: Option<String>,
    /// The script line a failed script run stopped at.
    pub script_line: Option<usize>,
}

impl<'a> Exec<'a> {
    /// An executor over `data` at node clock `clock` for `client`. Expired keys are
    /// dropped first, as Redis does on access.
    pub fn new(data: &'a mut Data, clock: i64, client: u8) -> Self {
        data.expire(clock);
        Exec {
            data,
            clock,
            client,
            tick_ms: 1,
            lock_key: None,
            effect: Effect::default(),
            unmodelled: None,
            script_line: None,
        }
    }

    /// The same executor with `tick_ms` milliseconds a tick.
    #[must_use]
    pub fn with_tick_ms(mut self, tick_ms: u64) -> Self {
        self.tick_ms = tick_ms.max(1);
        self
    }

    /// The same executor counting displaced entries of `key` only: a script that
    /// deletes or rewrites another key (a signal list its waiters read) changes no lock.
    #[must_use]
    pub fn watching(mut self, key: &'a str) -> Self {
        self.lock_key = Some(key);
        self
    }

    /// Note that the entry of `key` owned by `owner` was deleted, overwritten or given
    /// another expiry, when `key` is the lock key.
    fn displace(&mut self, key: &str, owner: Option<u8>) {
        if self.lock_key.is_none_or(|k| k == key) {
            self.effect.displaced.push(owner);
        }
    }

    /// Milliseconds a tick.
    pub(crate) fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// The data, as the commands so far left it.
    pub(crate) fn data(&self) -> &Data {
        self.data
    }

    pub(crate) fn data_mut(&mut self) -> &mut Data {
        self.data
    }

    /// The node's clock.
    pub(crate) fn clock(&self) -> i64 {
        self.clock
    }

    /// The client the commands run for.
    pub(crate) fn client(&self) -> u8 {
        self.client
    }

    /// The node clock `ms` ticks from now (saturating: a lease that never ends).
    pub(crate) fn deadline(&self, ms: u64) -> i64 {
        self.clock
            .saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
    }

    /// The hash under `key`: `None` when missing, `WRONGTYPE` for a string.
    pub(crate) fn hash(&self, key: &str) -> Result<Option<&Vec<(Text, Text)>>, String> {
        match self.data.entry(key).map(|e| &e.value) {
            None => Ok(None),
            Some(Value::Hash(h)) => Ok(Some(h)),
            Some(Value::Str(_) | Value::List(_)) => Err(wrongtype()),
        }
    }

    /// The list under `key`: `None` when missing, `WRONGTYPE` for another type.
    pub(crate) fn list(&self, key: &str) -> Result<Option<&Vec<Text>>, String> {
        match self.data.entry(key).map(|e| &e.value) {
            None => Ok(None),
            Some(Value::List(l)) => Ok(Some(l)),
            Some(Value::Str(_) | Value::Hash(_)) => Err(wrongtype()),
        }
    }

    /// `LPUSH` (`head`) or `RPUSH key element ...`: the list's new length. A new key is
    /// this client's entry, without expiry.
    pub(crate) fn push(&mut self, key: &str, elements: &[&str], head: bool) -> Result<i64, String> {
        self.list(key)?;
        let client = self.client;
        if self.data.entry(key).is_none() {
            self.data.put(
                key,
                Entry {
                    value: Value::List(Vec::new()),
                    expires_at: None,
                    owner: Some(client),
                },
            );
        }
        let Some(Entry {
            value: Value::List(l),
            ..
        }) = self.data.entry_mut(key)
        else {
            unreachable!("a list is there")
        };
        for element in elements {
            if head {
                l.insert(0, (*element).into());
            } else {
                l.push((*element).into());
            }
        }
        Ok(i64::try_from(l.len()).unwrap_or(i64::MAX))
    }

    /// `LPOP` (`head`) or `RPOP key`: the element taken off; the key goes with its last.
    pub(crate) fn pop(&mut self, key: &str, head: bool) -> Result<Option<String>, String> {
        if self.list(key)?.is_none() {
            return Ok(None);
        }
        let Some(Entry {
            value: Value::List(l),
            ..
        }) = self.data.entry_mut(key)
        else {
            return Ok(None);
        };
        let element = if head { Some(l.remove(0)) } else { l.pop() };
        if l.is_empty() {
            self.data.remove(key);
        }
        Ok(element.map(String::from))
    }

    /// `HSET key field value` for one field: whether the field is new. A new key is
    /// this client's entry, as `HINCRBY` makes it.
    pub(crate) fn set_field(
        &mut self,
        key: &str,
        field: &str,
        value: &str,
    ) -> Result<bool, String> {
        self.hash(key)?;
        let client = self.client;
        let Some(Entry {
            value: Value::Hash(h),
            ..
        }) = self.data.entry_mut(key)
        else {
            self.data.put(
                key,
                Entry {
                    value: Value::Hash(vec![(field.into(), value.into())]),
                    expires_at: None,
                    owner: Some(client),
                },
            );
            return Ok(true);
        };
        match h.iter_mut().find(|(f, _)| f == field) {
            Some((_, v)) => {
                *v = value.into();
                Ok(false)
            }
            None => {
                h.push((field.into(), value.into()));
                Ok(true)
            }
        }
    }

    /// `HDEL key field ...`: how many fields went; the key goes with its last field.
    pub(crate) fn remove_fields(&mut self, key: &str, fields: &[&str]) -> Result<i64, String> {
        if self.hash(key)?.is_none() {
            return Ok(0);
        }
        let Some(Entry {
            value: Value::Hash(h),
            ..
        }) = self.data.entry_mut(key)
        else {
            return Ok(0);
        };
        let before = h.len();
        h.retain(|(f, _)| !fields.contains(&f.as_str()));
        let removed = before - h.len();
        if h.is_empty() {
            self.del(key);
        }
        Ok(i64::try_from(removed).unwrap_or(i64::MAX))
    }

    /// A counter's new value (`INCRBY` and the like): the key keeps its expiry and its
    /// owner; a new key is this client's.
    pub(crate) fn set_counter(&mut self, key: &str, n: i64) {
        let client = self.client;
        let (expires_at, owner) = self
            .data
            .entry(key)
            .map_or((None, Some(client)), |e| (e.expires_at, e.owner));
        self.data.put(
            key,
            Entry {
                value: Value::Str(n.to_string().into()),
                expires_at,
                owner,
            },
        );
    }

    pub(crate) fn write(&mut self, key: &str, value: Value, expires_at: Option<i64>) {
        if let Some(owner) = self.data.entry(key).map(|e| e.owner) {
            self.displace(key, owner);
        }
        self.data.put(
            key,
            Entry {
                value,
                expires_at,
                owner: Some(self.client),
            },
        );
    }

    fn string(&self, key: &str) -> Result<Option<String>, String> {
        match self.data.entry(key).map(|e| &e.value) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s.to_string())),
            Some(Value::Hash(_) | Value::List(_)) => Err(wrongtype()),
        }
    }

    /// Execute one command and return Redis' reply.
    pub fn run(&mut self, command: &Command) -> Reply {
        let r = |x: Result<Reply, String>| x.unwrap_or_else(Reply::Error);
        match command {
            Command::SetNx { key, value } => {
                if self.data.entry(key).is_some() {
                    Reply::Int(0)
                } else {
                    self.write(key, Value::Str(value.into()), None);
                    Reply::Int(1)
                }
            }
            Command::SetNxPx { key, value, px } => {
                if self.data.entry(key).is_some() {
                    Reply::Nil
                } else {
                    let at = self
                        .clock
                        .saturating_add(i64::try_from(*px).unwrap_or(i64::MAX));
                    self.write(key, Value::Str(value.into()), Some(at));
                    Reply::Ok
                }
            }
            Command::Get { key } => r(self.string(key).map(|v| v.map_or(Reply::Nil, Reply::Bulk))),
            Command::Exists { key } => Reply::Int(i64::from(self.data.entry(key).is_some())),
            Command::SetPx { key, value, px } => {
                let at = self
                    .clock
                    .saturating_add(i64::try_from(*px).unwrap_or(i64::MAX));
                self.write(key, Value::Str(value.into()), Some(at));
                Reply::Ok
            }
            Command::GetSet { key, value } => r(self.string(key).map(|old| {
                self.write(key, Value::Str(value.into()), None);
                old.map_or(Reply::Nil, Reply::Bulk)
            })),
            Command::Del { key } => Reply::Int(self.del(key)),
            Command::PExpire { key, ms } => Reply::Int(self.pexpire(key, *ms)),
            Command::Incr { key } => r(self.string(key).and_then(|v| {
                let n = match v {
                    None => 0,
                    Some(s) => s
                        .parse::<i64>()
                        .map_err(|_| "ERR value is not an integer or out of range".to_string())?,
                } + 1;
                let expires_at = self.data.entry(key).and_then(|e| e.expires_at);
                // The counter is not a lock entry: keep its owner out of the ghost checks.
                self.data.put(
                    key,
                    Entry {
                        value: Value::Str(n.to_string().into()),
                        expires_at,
                        owner: None,
                    },
                );
                Ok(Reply::Int(n))
            })),
            Command::Eval { script, keys, args } => {
                crate::script_memo::eval(self, script, keys, args)
            }
            // WAIT is answered by the model, which knows the replicas.
            Command::Wait { .. } => Reply::Int(0),
            Command::Call { args } => self.call(args),
        }
    }
}

fn wrongtype() -> String {
    "WRONGTYPE Operation against a key holding the wrong kind of value".to_string()
}

/// The commands scripts and [`Exec::call`] share, each with the meaning of the Redis
/// command of the same name.
impl Exec<'_> {
    /// `GET key`: `Err` with a `WRONGTYPE` message when the key holds a hash.
    pub fn get(&self, key: &str) -> Result<Option<String>, String> {
        self.string(key)
    }

    /// `DEL key`: 1 when removed.
    pub fn del(&mut self, key: &str) -> i64 {
        match self.data.remove(key) {
            Some(old) => {
                self.displace(key, old.owner);
                1
            }
            None => 0,
        }
    }

    /// `EXISTS key`.
    pub fn exists(&self, key: &str) -> bool {
        self.data.entry(key).is_some()
    }

    /// `PEXPIRE key ms` for a typed command, in ticks: 1 when the key exists.
    pub fn pexpire(&mut self, key: &str, ticks: u64) -> i64 {
        let at = self.deadline(ticks);
        self.expire_at(key, at)
    }

    /// Sets `key`'s expiry to tick `at`: 1 when the key exists.
    pub(crate) fn expire_at(&mut self, key: &str, at: i64) -> i64 {
        match self.data.entry_mut(key) {
            Some(e) => {
                e.expires_at = Some(at);
                let owner = e.owner;
                // Changing the expiry of another client's entry changes its lock.
                self.displace(key, owner);
                1
            }
            None => 0,
        }
    }

    /// The time to live of `key` in ticks: -2 when missing, -1 without expiry.
    pub fn pttl(&self, key: &str) -> i64 {
        match self.data.entry(key) {
            None => -2,
            Some(Entry {
                expires_at: None, ..
            }) => -1,
            Some(Entry {
                expires_at: Some(at),
                ..
            }) => at - self.clock,
        }
    }

    /// `HEXISTS key field`.
    pub fn hexists(&self, key: &str, field: &str) -> Result<bool, String> {
        match self.data.entry(key).map(|e| &e.value) {
            None => Ok(false),
            Some(Value::Hash(h)) => Ok(h.iter().any(|(f, _)| f == field)),
            Some(Value::Str(_) | Value::List(_)) => Err(wrongtype()),
        }
    }

    /// `HINCRBY key field by`: the new value.
    pub fn hincrby(&mut self, key: &str, field: &str, by: i64) -> Result<i64, String> {
        let old = match self.hash(key)? {
            None => 0,
            Some(h) => match h.iter().find(|(f, _)| f == field) {
                None => 0,
                Some((_, v)) => v
                    .parse::<i64>()
                    .map_err(|_| "ERR hash value is not an integer".to_string())?,
            },
        };
        let n = old
            .checked_add(by)
            .ok_or_else(|| "ERR increment or decrement would overflow".to_string())?;
        self.set_field(key, field, &n.to_string())?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab::Script;

    fn set(key: &str, v: &str, px: u64) -> Command {
        Command::SetNxPx {
            key: key.into(),
            value: v.into(),
            px,
        }
    }

    #[test]
    fn set_nx_px_expires_on_the_node_clock() {
        let mut d = Data::default();
        assert_eq!(Exec::new(&mut d, 0, 0).run(&set("k", "a", 3)), Reply::Ok);
        assert_eq!(Exec::new(&mut d, 2, 1).run(&set("k", "b", 3)), Reply::Nil);
        assert_eq!(Exec::new(&mut d, 3, 1).run(&set("k", "b", 3)), Reply::Ok);
    }

    #[test]
    fn compare_and_delete_records_what_it_displaced() {
        let mut d = Data::default();
        Exec::new(&mut d, 0, 0).run(&set("k", "a", 3));
        let del = |tok: &str| Command::Eval {
            script: Script::CompareAndDelete,
            keys: vec!["k".into()],
            args: vec![tok.into()],
        };
        let mut ex = Exec::new(&mut d, 1, 1);
        assert_eq!(ex.run(&del("b")), Reply::Int(0));
        assert_eq!(ex.effect.displaced, vec![]);
        assert_eq!(ex.run(&del("a")), Reply::Int(1));
        assert_eq!(ex.effect.displaced, vec![Some(0)]);
    }

    /// Watching the lock key, only its entries count as displaced: a release that
    /// empties a signal list another client pushed changes no lock.
    #[test]
    fn only_the_watched_key_is_displaced() {
        let words = |w: &str| w.split_whitespace().map(String::from).collect::<Vec<_>>();
        let mut d = Data::default();
        Exec::new(&mut d, 0, 0).call(&words("SET lock t1"));
        Exec::new(&mut d, 0, 0).call(&words("LPUSH lock-signal 1"));
        let mut ex = Exec::new(&mut d, 1, 1).watching("lock");
        assert_eq!(ex.call(&words("DEL lock-signal")), Reply::Int(1));
        assert_eq!(ex.call(&words("LPUSH lock-signal 1")), Reply::Int(1));
        assert_eq!(ex.effect.displaced, vec![]);
        assert_eq!(ex.call(&words("DEL lock")), Reply::Int(1));
        assert_eq!(ex.effect.displaced, vec![Some(0)]);
    }

    #[test]
    fn reentrant_scripts_count_holds() {
        let mut d = Data::default();
        let call = |s: Script| Command::Eval {
            script: s,
            keys: vec!["k".into()],
            args: vec!["5".into(), "me".into()],
        };
        let mut ex = Exec::new(&mut d, 0, 0);
        assert_eq!(ex.run(&call(Script::ReentrantLock)), Reply::Nil);
        assert_eq!(ex.run(&call(Script::ReentrantLock)), Reply::Nil);
        assert_eq!(ex.run(&call(Script::ReentrantUnlock)), Reply::Int(0));
        assert_eq!(ex.run(&call(Script::ReentrantUnlock)), Reply::Int(1));
        assert_eq!(ex.run(&call(Script::ReentrantUnlock)), Reply::Nil);
    }
}
