//! The soak's adapter clients: a third-party lock library driven through an adapter
//! program (`locklab soak --client CMD`), one child process per client, spoken to over
//! its stdin and stdout with the [`protocol`] (docs/ADAPTERS.md).
//!
//! The harness keeps everything but the lock: the clock, the critical section (the
//! stock read and write on the fenced store of [`Recorder`], with the library's fencing
//! token when it gives one), the calls to `extend` while the work runs (for a library
//! whose application must call it), and the history. The library keeps its own
//! connections (to the soak's link proxies), retries, renewal threads and timeouts.
//!
//! Faults reach the library as they would reach an application using it: a pause is
//! `SIGSTOP` of the adapter's process group and the harness's own steps for that client
//! stop at its [`PauseGate`] (`SIGCONT` and the gate's resume end it); a crash is
//! `SIGKILL` of the process group, and the client comes back as a new process (a new
//! client id); link faults strike the library's connections in the link proxies; node
//! faults strike the nodes. Slow steps delay the harness's passages only (each request
//! to the adapter, each answer, the read, the write), not the library's own threads
//! ([`ADAPTER_SLOW_STEPS`]).
//!
//! An adapter that breaks the protocol (an answer that is not the protocol's JSON, an
//! exit, no answer within the answer timeout, paused time not counted) stops the soak
//! with an error naming the client, the adapter, the request and the line; every
//! adapter process is killed when its client ends, and the containers are removed.

use std::collections::{BTreeMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use locklab::driver::{ClockShift, PauseGate};
use locklab::Fencing;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

use super::client::Spec;
use super::protocol::{self, Answer, Ready, Request, Start};
use super::{client_id, Recorder};
use crate::run::history::Event;
use crate::run::RunError;

/// How a soak's slow steps reach an adapter client, named in the docs.
pub const ADAPTER_SLOW_STEPS: &str = "with an adapter, slow steps delay the harness's passages (each request to the adapter, each answer, the read, the write), not the library's own threads";

/// Stderr lines of an adapter kept for an error message.
const STDERR_TAIL: usize = 12;

/// The adapter command and how long an answer may take.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterCommand {
    /// A shell command line, run with `sh -c` in its own process group.
    pub command: String,
    /// How long the adapter may take to answer one request (time its client spends
    /// paused does not count).
    pub answer_timeout: Duration,
}

impl AdapterCommand {
    /// The default answer timeout: a library may retry for seconds on its own
    /// (redis-py's connection retries, a Redlock's retry loop).
    pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

    pub fn new(command: impl Into<String>) -> Self {
        AdapterCommand {
            command: command.into(),
            answer_timeout: Self::DEFAULT_ANSWER_TIMEOUT,
        }
    }
}

/// The process groups of the adapters running in this process: an interrupted soak
/// exits without dropping its clients, and kills them from here ([`kill_running`]).
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Set by [`kill_running`]: the process is exiting on a signal, and an adapter that
/// dies now died of it (its client waits for the exit instead of reporting an error).
static KILLED: AtomicBool = AtomicBool::new(false);

/// Kill every adapter this process started and that still runs (Ctrl-C, SIGTERM: the
/// process is about to exit without dropping its clients; a stopped adapter would
/// never notice its stdin closing).
pub fn kill_running() {
    KILLED.store(true, Ordering::SeqCst);
    let groups = std::mem::take(&mut *RUNNING.lock().unwrap_or_else(|e| e.into_inner()));
    for pgid in groups {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// Sends `signal` to process group `pgid` (the adapter and anything it started).
fn signal_group(pgid: i32, signal: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid addresses the process group we created
        // for the adapter; it has no memory effects in this process.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// One running adapter process.
struct Process {
    child: Child,
    pgid: i32,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Lines read from its stdout so far.
    lines: usize,
    /// Requests sent so far.
    requests: usize,
    /// `client1 (adapter `CMD`, pid N)`, for errors.
    who: String,
}

impl Drop for Process {
    fn drop(&mut self) {
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&g| g != self.pgid);
        signal_group(self.pgid, libc::SIGKILL);
        let _ = self.child.start_kill();
        let _ = self.child.try_wait();
    }
}

impl Process {
    fn spawn(c: usize, command: &str) -> Result<Process, String> {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("client{}: cannot start the adapter `{command}`: {e}", c + 1))?;
        let pid = child.id().unwrap_or(0);
        let pgid = i32::try_from(pid).unwrap_or(0);
        RUNNING.lock().unwrap_or_else(|e| e.into_inner()).push(pgid);
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr.clone();
        let mut err_lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = err_lines.next_line().await {
                let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
        Ok(Process {
            child,
            pgid,
            stdin,
            stdout,
            stderr,
            lines: 0,
            requests: 0,
            who: format!("client{} (adapter `{command}`, pid {pid})", c + 1),
        })
    }

    fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        if tail.is_empty() {
            "its stderr is empty".into()
        } else {
            let lines: Vec<String> = tail.iter().map(|l| format!("    {l}")).collect();
            format!("its stderr ended with:\n{}", lines.join("\n"))
        }
    }

    /// The adapter is gone: how it ended, and its last words.
    async fn exited(&mut self, what: &str) -> String {
        if KILLED.load(Ordering::SeqCst) {
            // Killed by an interrupt: the process exits as the signal says.
            std::future::pending::<()>().await;
        }
        // Its stderr may still be draining.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let status = match tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            _ => "status unknown".into(),
        };
        format!(
            "{}: the adapter exited ({status}) {what}; {}",
            self.who,
            self.stderr_tail()
        )
    }

    /// Send `request` and read its answer line: the line and its number on the
    /// adapter's stdout. Time while `gate` is paused (the process is stopped) does not
    /// count against `timeout`.
    async fn call(
        &mut self,
        request: &Request,
        gate: &PauseGate,
        timeout: Duration,
    ) -> Result<(String, usize), String> {
        self.requests += 1;
        let n = self.requests;
        let line = request.line();
        let what = format!("before answering request {n} ({line})");
        let sent = async {
            self.stdin.write_all(line.as_bytes()).await?;
            self.stdin.write_all(b"\n").await?;
            self.stdin.flush().await
        };
        if sent.await.is_err() {
            return Err(self.exited(&what).await);
        }
        let mut left = timeout;
        let tick = Duration::from_millis(50);
        loop {
            match tokio::time::timeout(tick.min(left), self.stdout.next_line()).await {
                Ok(Ok(Some(answer))) => {
                    self.lines += 1;
                    return Ok((answer, self.lines));
                }
                Ok(Ok(None)) | Ok(Err(_)) => return Err(self.exited(&what).await),
                Err(_) => {
                    if !gate.is_paused() {
                        left = left.saturating_sub(tick);
                    }
                    if left.is_zero() {
                        return Err(format!(
                            "{}: no answer to request {n} ({line}) within {} s (a hung adapter; --client-timeout sets the limit); {}",
                            self.who,
                            timeout.as_secs_f64(),
                            self.stderr_tail()
                        ));
                    }
                }
            }
        }
    }

    /// `call`, with the answer parsed; a line that breaks the protocol is an error
    /// naming it.
    async fn ask(
        &mut self,
        request: &Request,
        gate: &PauseGate,
        timeout: Duration,
    ) -> Result<Answer, String> {
        let (line, number) = self.call(request, gate, timeout).await?;
        protocol::answer(&line).map_err(|e| self.bad_line(request, &line, number, &e.to_string()))
    }

    fn bad_line(&self, request: &Request, line: &str, number: usize, why: &str) -> String {
        let shown: String = line.chars().take(200).collect();
        format!(
            "{}: stdout line {number}, the answer to `{}`, {why}: {shown:?} (docs/ADAPTERS.md: one JSON object per line)",
            self.who,
            request.op()
        )
    }

    /// Start the adapter with `start` and read its `ready`.
    async fn handshake(
        &mut self,
        start: Start,
        gate: &PauseGate,
        timeout: Duration,
    ) -> Result<Ready, String> {
        let key = start.key.clone();
        let request = Request::Start(start);
        let (line, number) = self.call(&request, gate, timeout).await?;
        match protocol::ready(&line, &key) {
            Ok(Ok(ready)) => Ok(ready),
            Ok(Err(error)) => Err(format!(
                "{}: the library could not be set up: {error}",
                self.who
            )),
            Err(e) => Err(self.bad_line(&request, &line, number, &e.to_string())),
        }
    }
}

/// What every adapter client runs with.
#[derive(Clone, Debug)]
struct AdapterSpec {
    spec: Spec,
    command: AdapterCommand,
    /// How often the application calls `extend` while it holds the lock, when the
    /// adapter asks for it (the scenario's renewal interval).
    renew_every_ms: Option<u64>,
    /// The per-command timeout given to the adapter.
    timeout_ms: u64,
}

impl AdapterSpec {
    fn start(&self, id: &str, urls: &[String]) -> Start {
        Start {
            client: id.to_string(),
            urls: urls.to_vec(),
            key: self.spec.key.clone(),
            ttl_ms: self.spec.ttl_ms,
            timeout_ms: self.timeout_ms,
            wait_replicas: self.spec.wait_replicas,
            wait_timeout_ms: self.spec.wait_timeout_ms,
            renew_every_ms: self.renew_every_ms,
        }
    }
}

/// One client slot: its gate, its process group, its task, its lives.
struct Slot {
    gate: PauseGate,
    /// Never read by a library (its own clock is its process's); kept so that every
    /// fleet answers the nemesis alike.
    clock: ClockShift,
    pgid: Arc<AtomicI32>,
    task: Option<JoinHandle<()>>,
    generation: u32,
}

/// Counts of the library's answers, by operation and outcome (an error by its text).
pub type AnswerCounts = BTreeMap<(String, String), usize>;

struct Shared {
    spec: AdapterSpec,
    ready: Ready,
    urls: Vec<Vec<String>>,
    recorder: Arc<Recorder>,
    stop: Arc<AtomicBool>,
    seed: u64,
    fatal: Mutex<Option<String>>,
    answers: Mutex<AnswerCounts>,
}

impl Shared {
    fn fail(&self, message: String) {
        let mut fatal = self.fatal.lock().unwrap_or_else(|e| e.into_inner());
        fatal.get_or_insert(message);
    }

    fn count(&self, op: &str, answer: &Answer) {
        let outcome = match answer {
            Answer::Granted { .. } => "granted".to_string(),
            Answer::Denied => "denied".to_string(),
            Answer::Error(e) => format!("error: {}", short(e)),
        };
        *self
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((op.to_string(), outcome))
            .or_default() += 1;
    }
}

fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line.to_string(),
    }
}

/// The soak's adapter clients.
pub struct AdapterClients {
    shared: Arc<Shared>,
    slots: Mutex<Vec<Slot>>,
}

impl AdapterClients {
    /// Start one adapter per client (`urls[c]`: client `c`'s link to each master) and
    /// wait for every `ready`; then start the clients' loops. The adapters must agree on
    /// the key, and one that asks for `extend` calls needs a scenario lock that renews.
    pub async fn start(
        spec: Spec,
        command: AdapterCommand,
        renew_every_ms: Option<u64>,
        urls: Vec<Vec<String>>,
        recorder: Arc<Recorder>,
        stop: Arc<AtomicBool>,
        seed: u64,
    ) -> Result<AdapterClients, RunError> {
        let timeout_ms = (spec.ttl_ms / 2).clamp(1, 250);
        let aspec = AdapterSpec {
            spec,
            command,
            renew_every_ms,
            timeout_ms,
        };
        let n = urls.len();
        let gates: Vec<PauseGate> = (0..n).map(|_| PauseGate::new()).collect();
        let mut started = Vec::with_capacity(n);
        for (c, gate) in gates.iter().enumerate() {
            let mut process =
                Process::spawn(c, &aspec.command.command).map_err(RunError::Client)?;
            let start = aspec.start(&client_id(c, 1), &urls[c]);
            let ready = process
                .handshake(start, gate, aspec.command.answer_timeout)
                .await
                .map_err(RunError::Client)?;
            started.push((process, ready));
        }
        let ready = started[0].1.clone();
        for (c, (p, r)) in started.iter().enumerate() {
            if r.key != ready.key {
                return Err(RunError::Client(format!(
                    "{}: the library writes key `{}`, client1's writes `{}`",
                    p.who, r.key, ready.key
                )));
            }
            if r.extends && renew_every_ms.is_none() {
                return Err(RunError::Client(format!(
                    "client{}: the adapter asks for `extend` calls (\"extends\": true) but the scenario's lock does not renew: give the scenario the library's extend as its renew step",
                    c + 1
                )));
            }
        }
        let shared = Arc::new(Shared {
            spec: aspec,
            ready,
            urls,
            recorder,
            stop,
            seed,
            fatal: Mutex::new(None),
            answers: Mutex::new(BTreeMap::new()),
        });
        let clients = AdapterClients {
            shared,
            slots: Mutex::new(
                gates
                    .into_iter()
                    .map(|gate| Slot {
                        gate,
                        clock: ClockShift::new(),
                        pgid: Arc::new(AtomicI32::new(0)),
                        task: None,
                        generation: 0,
                    })
                    .collect(),
            ),
        };
        for (c, (process, _)) in started.into_iter().enumerate() {
            clients.spawn(c, Some(process));
        }
        Ok(clients)
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the adapters said at the start: the library, its key.
    pub fn ready(&self) -> &Ready {
        &self.shared.ready
    }

    /// The adapter command.
    pub fn command(&self) -> &AdapterCommand {
        &self.shared.spec.command
    }

    /// The first protocol error of any client, once there is one: the soak stops.
    pub fn fatal(&self) -> Option<String> {
        self.shared
            .fatal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The library's answers so far, by operation and outcome.
    pub fn answers(&self) -> AnswerCounts {
        self.shared
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Number of clients.
    pub fn len(&self) -> usize {
        self.shared.urls.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.shared.urls.is_empty()
    }

    fn spawn(&self, c: usize, process: Option<Process>) {
        let mut slots = self.slots();
        let slot = &mut slots[c];
        slot.generation += 1;
        if process.is_none() {
            slot.gate = PauseGate::new();
        }
        let seed = self
            .shared
            .seed
            .wrapping_add((c as u64) << 32)
            .wrapping_add(u64::from(slot.generation));
        let shared = self.shared.clone();
        let gate = slot.gate.clone();
        let pgid = slot.pgid.clone();
        let id = client_id(c, slot.generation);
        slot.task = Some(tokio::spawn(async move {
            if let Err(e) = client_loop(&shared, c, &id, process, &gate, &pgid, seed).await {
                shared.fail(e);
            }
        }));
    }

    /// Client `c`'s pause gate (the harness's own steps for it).
    pub fn gate(&self, c: usize) -> PauseGate {
        self.slots()[c].gate.clone()
    }

    /// Client `c`'s clock shift (no library reads it).
    pub fn clock(&self, c: usize) -> ClockShift {
        self.slots()[c].clock.clone()
    }

    /// Stop-the-world pause of client `c`: `SIGSTOP` of its adapter's process group,
    /// and its gate closed.
    pub fn pause(&self, c: usize) {
        let slots = self.slots();
        slots[c].gate.pause();
        signal_group(slots[c].pgid.load(Ordering::SeqCst), libc::SIGSTOP);
    }

    /// The paused client `c` runs again.
    pub fn resume(&self, c: usize) {
        let slots = self.slots();
        signal_group(slots[c].pgid.load(Ordering::SeqCst), libc::SIGCONT);
        slots[c].gate.resume();
    }

    /// Client `c` crashes: `SIGKILL` of its adapter's process group, wherever it is.
    /// Recorded.
    pub fn crash(&self, c: usize) {
        let task = {
            let mut slots = self.slots();
            signal_group(slots[c].pgid.swap(0, Ordering::SeqCst), libc::SIGKILL);
            slots[c].task.take()
        };
        if let Some(task) = task {
            task.abort();
        }
        self.shared.recorder.push(Event::Crash { client: c });
    }

    /// Crashed client `c` comes back as a new process.
    pub fn restart(&self, c: usize) {
        if !self.shared.stop.load(Ordering::SeqCst) {
            self.spawn(c, None);
        }
    }

    /// Wait up to `grace` for every client to finish its round, then kill the rest.
    /// Every adapter process is gone when this returns.
    pub async fn stop(&self, grace: Duration) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let tasks: Vec<JoinHandle<()>> = {
            let mut slots = self.slots();
            for s in slots.iter() {
                signal_group(s.pgid.load(Ordering::SeqCst), libc::SIGCONT);
                s.gate.resume();
            }
            slots.iter_mut().filter_map(|s| s.task.take()).collect()
        };
        super::fleet::finish(tasks, grace).await;
    }
}

impl Drop for AdapterClients {
    fn drop(&mut self) {
        // An error path: no adapter outlives the soak.
        for s in self.slots().iter_mut() {
            signal_group(s.pgid.swap(0, Ordering::SeqCst), libc::SIGKILL);
            if let Some(t) = s.task.take() {
                t.abort();
            }
        }
    }
}

/// One client's life: start its adapter (unless started), then rounds of acquire →
/// critical section → release until the soak stops. An error is a broken protocol.
async fn client_loop(
    shared: &Shared,
    c: usize,
    id: &str,
    process: Option<Process>,
    gate: &PauseGate,
    pgid: &AtomicI32,
    seed: u64,
) -> Result<(), String> {
    let spec = &shared.spec;
    let timeout = spec.command.answer_timeout;
    let rec = &shared.recorder;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut p = match process {
        Some(p) => p,
        None => {
            gate.wait().await;
            let mut p = Process::spawn(c, &spec.command.command)?;
            pgid.store(p.pgid, Ordering::SeqCst);
            let ready = p
                .handshake(spec.start(id, &shared.urls[c]), gate, timeout)
                .await?;
            if ready.key != shared.ready.key {
                return Err(format!(
                    "{}: the library writes key `{}` in this life, `{}` before",
                    p.who, ready.key, shared.ready.key
                ));
            }
            p
        }
    };
    pgid.store(p.pgid, Ordering::SeqCst);
    let extend_every = match (shared.ready.extends, spec.renew_every_ms) {
        (true, Some(ms)) => Some(Duration::from_millis(ms.max(1))),
        _ => None,
    };
    let work = Duration::from_millis(spec.spec.work_ms);
    let mut attempt: u64 = 0;
    while !shared.stop.load(Ordering::SeqCst) {
        gate.wait().await;
        let token = format!("{id}:{attempt}");
        attempt += 1;
        rec.push(Event::AcquireStart {
            client: c,
            token: token.clone(),
        });
        let answer = p
            .ask(
                &Request::Acquire {
                    token: token.clone(),
                },
                gate,
                timeout,
            )
            .await?;
        gate.wait().await;
        shared.count("acquire", &answer);
        let fence = match answer {
            Answer::Granted {
                token: stored,
                fence,
                ..
            } => {
                rec.register_token(stored.unwrap_or(token), c);
                fence
            }
            Answer::Denied | Answer::Error(_) => {
                let outcome = match answer {
                    Answer::Error(e) => short(&e),
                    _ => "busy".into(),
                };
                rec.push(Event::AcquireFailed { client: c, outcome });
                tokio::time::sleep(spec.spec.retry_pause(&mut rng)).await;
                continue;
            }
        };
        if spec.spec.fencing != Fencing::Off && fence.is_none() {
            return Err(format!(
                "{}: the scenario fences the stock, and the library granted the lock without a fencing token (`fence`)",
                p.who
            ));
        }
        let acquired = tokio::time::Instant::now();
        rec.push(Event::Acquired { client: c, fence });
        gate.wait().await;
        if let Some(value) = rec.read_stock(c, fence) {
            // The work, with the application's calls to `extend` when the library
            // wants them: every renewal interval from the grant.
            let done = tokio::time::Instant::now() + work;
            let mut next = extend_every.map(|every| acquired + every);
            loop {
                match next {
                    Some(at) if at < done => {
                        tokio::time::sleep_until(at).await;
                        gate.wait().await;
                        let answer = p.ask(&Request::Extend, gate, timeout).await?;
                        gate.wait().await;
                        shared.count("extend", &answer);
                        next = extend_every.map(|every| at + every);
                    }
                    _ => {
                        tokio::time::sleep_until(done).await;
                        break;
                    }
                }
            }
            // A pause during the work holds the write back until the client resumes.
            gate.wait().await;
            rec.write_stock(c, fence, value - 1);
        }
        rec.push(Event::ReleaseStart { client: c });
        gate.wait().await;
        let answer = p.ask(&Request::Release, gate, timeout).await?;
        gate.wait().await;
        shared.count("release", &answer);
        rec.push(Event::Done { client: c });
    }
    Ok(())
}
