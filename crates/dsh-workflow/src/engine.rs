//! The engine thread: one QuickJS runtime per run with its limits, and the
//! loop that runs the script's jobs, hands agent calls to the host, feeds
//! the answers back and ends with the script's result.
//!
//! The loop never spins: when no job is pending and the script's promise is
//! unsettled, the thread blocks on the reply channel until the host settles
//! a call or cancels.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Persistent, Promise, Runtime, Value};
use rustix::time::{ClockId, clock_gettime};
use tokio::sync::mpsc::UnboundedSender;

use crate::errors::{ScriptFile, is_out_of_memory};
use crate::eval_options::global_script;
use crate::natives::Host;
use crate::result::{ResultError, to_json};
use crate::{Event, Limits, Reply, RunError, Script, prelude};

/// QuickJS's stack limit: deep recursion becomes a catchable error.
const JS_STACK_BYTES: usize = 256 * 1024;

/// The engine thread's stack: room for QuickJS's limit and the Rust frames
/// around it (reserved address space, not memory in use).
const THREAD_STACK_BYTES: usize = 8 * 1024 * 1024;

/// Starts the engine thread for `script`; it ends by sending
/// [`Event::Finished`].
pub(crate) fn spawn(
    script: Script,
    limits: Limits,
    events: UnboundedSender<Event>,
    replies: Receiver<Reply>,
    cancelled: Arc<AtomicBool>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("dsh-workflow".to_owned())
        .stack_size(THREAD_STACK_BYTES)
        .spawn(move || {
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                run(&script, &limits, &events, &replies, &cancelled)
            }))
            .unwrap_or_else(|payload| {
                Err(RunError::Engine(format!(
                    "the engine panicked: {}",
                    panic_text(payload.as_ref())
                )))
            });
            let _ = events.send(Event::Finished(outcome));
        })
        .map(drop)
}

/// The message of a panic payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(no message)".to_owned()
    }
}

/// Why the interrupt handler stopped the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The CPU time ran out.
    Cpu,
    /// The host cancelled.
    Cancelled,
}

/// This thread's CPU time.
fn thread_cpu_time() -> Duration {
    let now = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// The runtime and context of one run, created on the engine thread.
pub(crate) struct Engine {
    /// The QuickJS runtime, with the limits applied.
    pub(crate) runtime: Runtime,
    /// Its only context.
    pub(crate) context: Context,
    /// Set by the interrupt handler when it stops the script.
    stop: Rc<Cell<Option<Stop>>>,
}

impl Engine {
    /// A runtime with the memory and stack limits and an interrupt handler
    /// that stops the script once it used `limits.cpu` of this thread's CPU
    /// time (counted from now) or once `cancelled` is set.
    pub(crate) fn new(limits: &Limits, cancelled: Arc<AtomicBool>) -> Result<Self, RunError> {
        let runtime = Runtime::new().map_err(|err| {
            RunError::Engine(format!("could not create the QuickJS runtime: {err}"))
        })?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(JS_STACK_BYTES);
        let stop = Rc::new(Cell::new(None));
        let handler_stop = stop.clone();
        let cpu = limits.cpu;
        let start = thread_cpu_time();
        runtime.set_interrupt_handler(Some(Box::new(move || {
            if handler_stop.get().is_some() {
                return true;
            }
            if cancelled.load(Ordering::SeqCst) {
                handler_stop.set(Some(Stop::Cancelled));
                return true;
            }
            if thread_cpu_time().saturating_sub(start) > cpu {
                handler_stop.set(Some(Stop::Cpu));
                return true;
            }
            false
        })));
        let context = Context::full(&runtime).map_err(|err| {
            RunError::Engine(format!("could not create the QuickJS context: {err}"))
        })?;
        Ok(Self {
            runtime,
            context,
            stop,
        })
    }
}

/// Runs `script` to its end.
fn run(
    script: &Script,
    limits: &Limits,
    events: &UnboundedSender<Event>,
    replies: &Receiver<Reply>,
    cancelled: &Arc<AtomicBool>,
) -> Result<serde_json::Value, RunError> {
    let args = serde_json::to_string(&script.args)
        .map_err(|err| RunError::Engine(format!("the args are not JSON: {err}")))?;
    let engine = Engine::new(limits, cancelled.clone())?;
    let mut driver = Driver {
        engine: &engine,
        host: Rc::new(Host::new(events.clone(), limits)),
        limits,
        file: ScriptFile::new(&script.name, &script.source),
        cancelled,
        settle: None,
        main: None,
    };
    let outcome = driver.drive(&script.source, &args, replies);
    // The persistent values must go before the context and runtime.
    drop(driver);
    let usage = engine.runtime.memory_usage();
    tracing::debug!(
        malloc_bytes = usage.malloc_size,
        objects = usage.obj_count,
        ok = outcome.is_ok(),
        "workflow run ended"
    );
    outcome
}

/// The state of a run between steps. Every step enters the context anew,
/// so that pending jobs can be run on the runtime in between.
struct Driver<'a> {
    /// The runtime and context.
    engine: &'a Engine,
    /// The state shared with the natives.
    host: Rc<Host>,
    /// The run's limits.
    limits: &'a Limits,
    /// The script's file, for error positions.
    file: ScriptFile,
    /// The host's cancel flag.
    cancelled: &'a AtomicBool,
    /// The prelude's `settle(id, value)`.
    settle: Option<Persistent<Function<'static>>>,
    /// The promise of the script's async function.
    main: Option<Persistent<Promise<'static>>>,
}

impl Driver<'_> {
    /// Installs the hooks, starts the script and runs it to its end.
    fn drive(
        &mut self,
        source: &str,
        args: &str,
        replies: &Receiver<Reply>,
    ) -> Result<serde_json::Value, RunError> {
        self.install(args)?;
        self.start(source)?;
        loop {
            self.check_stop()?;
            self.run_jobs()?;
            if let Some(result) = self.settled()? {
                return Ok(result);
            }
            if !self.host.has_outstanding() {
                return Err(RunError::Failed(
                    "WorkflowError: the script is waiting on nothing: its promise is still pending \
                     but no agent() call is outstanding and no work is queued, so it can never \
                     finish (an await on a promise that is never settled?)"
                        .to_owned(),
                ));
            }
            let reply = replies.recv().unwrap_or(Reply::Cancel);
            self.handle(reply)?;
            while let Ok(reply) = replies.try_recv() {
                self.handle(reply)?;
            }
        }
    }

    /// The error for a stop by the interrupt handler or the cancel flag.
    fn stop_error(&self) -> Option<RunError> {
        match self.engine.stop.get() {
            Some(Stop::Cpu) => Some(RunError::CpuLimit {
                limit_ms: u64::try_from(self.limits.cpu.as_millis()).unwrap_or(u64::MAX),
            }),
            Some(Stop::Cancelled) => Some(RunError::Cancelled),
            None => self
                .cancelled
                .load(Ordering::SeqCst)
                .then_some(RunError::Cancelled),
        }
    }

    /// Fails if the run was stopped.
    fn check_stop(&self) -> Result<(), RunError> {
        self.stop_error().map_or(Ok(()), Err)
    }

    /// The failure for an rquickjs error raised in `ctx`.
    fn failure(&self, ctx: &Ctx<'_>, error: rquickjs::Error) -> RunError {
        if let Some(stop) = self.stop_error() {
            return stop;
        }
        match error {
            rquickjs::Error::Exception => {
                let thrown = ctx.catch();
                self.thrown(ctx, &thrown)
            }
            rquickjs::Error::Allocation => self.out_of_memory(),
            other => RunError::Engine(other.to_string()),
        }
    }

    /// The failure for the value `thrown` by the script.
    fn thrown<'js>(&self, ctx: &Ctx<'js>, thrown: &Value<'js>) -> RunError {
        if let Some(stop) = self.stop_error() {
            return stop;
        }
        if is_out_of_memory(thrown) {
            return self.out_of_memory();
        }
        let text = self.file.thrown(ctx, thrown);
        // Reading the error may itself have run out the clock.
        self.stop_error().unwrap_or(RunError::Failed(text))
    }

    /// The memory-limit failure.
    fn out_of_memory(&self) -> RunError {
        RunError::Memory {
            limit_bytes: self.limits.memory_bytes,
        }
    }

    /// Evaluates the prelude.
    fn install(&mut self, args: &str) -> Result<(), RunError> {
        let settle = self.engine.context.with(|ctx| {
            prelude::install(&ctx, &self.host, args, self.limits.max_agents)
                .map(|settle| Persistent::save(&ctx, settle))
                .map_err(|err| match self.failure(&ctx, err) {
                    RunError::Failed(text) => {
                        RunError::Engine(format!("the workflow prelude failed: {text}"))
                    }
                    other => other,
                })
        })?;
        self.settle = Some(settle);
        Ok(())
    }

    /// Compiles the script, reports [`Event::Started`] and calls it.
    fn start(&mut self, source: &str) -> Result<(), RunError> {
        let wrapped = format!("(async function () {{\n{source}\n}})");
        let main = self.engine.context.with(|ctx| {
            let options = global_script(&self.file.file, false);
            let compiled = match ctx.eval_with_options::<Value, _>(wrapped, options) {
                Ok(compiled) => compiled,
                Err(rquickjs::Error::Exception) => {
                    let thrown = ctx.catch();
                    if let Some(stop) = self.stop_error() {
                        return Err(stop);
                    }
                    if is_out_of_memory(&thrown) {
                        return Err(self.out_of_memory());
                    }
                    return Err(RunError::Parse(self.file.syntax_error(&ctx, &thrown)));
                }
                Err(other) => return Err(self.failure(&ctx, other)),
            };
            let Some(function) = compiled.into_function() else {
                return Err(RunError::Parse(
                    "the script must be the body of a function (are its braces balanced?)"
                        .to_owned(),
                ));
            };
            self.host.send(Event::Started);
            let returned: Value = function.call(()).map_err(|err| self.failure(&ctx, err))?;
            let promise = match returned.into_promise() {
                Some(promise) => promise,
                None => {
                    // Only when the source closed the wrapper early.
                    let (promise, resolve, _) =
                        ctx.promise().map_err(|err| self.failure(&ctx, err))?;
                    resolve
                        .call::<_, ()>((Value::new_undefined(ctx.clone()),))
                        .map_err(|err| self.failure(&ctx, err))?;
                    promise
                }
            };
            Ok(Persistent::save(&ctx, promise))
        })?;
        self.main = Some(main);
        Ok(())
    }

    /// Runs every pending job, stopping early if the interrupt fired.
    fn run_jobs(&self) -> Result<(), RunError> {
        loop {
            match self.engine.runtime.execute_pending_job() {
                Ok(true) => self.check_stop()?,
                Ok(false) => return Ok(()),
                Err(job) => {
                    let error = job.0.with(|ctx| {
                        let thrown = ctx.catch();
                        self.thrown(&ctx, &thrown)
                    });
                    return Err(error);
                }
            }
        }
    }

    /// The script's result once its promise settled.
    fn settled(&self) -> Result<Option<serde_json::Value>, RunError> {
        let Some(main) = self.main.clone() else {
            return Err(RunError::Engine("the script was not started".to_owned()));
        };
        self.engine.context.with(|ctx| {
            let promise = main.restore(&ctx).map_err(|err| self.failure(&ctx, err))?;
            match promise.state() {
                PromiseState::Pending => Ok(None),
                PromiseState::Resolved => {
                    let value: Value = match promise.result() {
                        Some(Ok(value)) => value,
                        Some(Err(err)) => return Err(self.failure(&ctx, err)),
                        None => Value::new_undefined(ctx.clone()),
                    };
                    match to_json(&ctx, value, self.limits.max_result_bytes) {
                        Ok(json) => self.check_stop().map(|()| Some(json)),
                        Err(ResultError::NotJson(text)) => {
                            Err(self.stop_error().unwrap_or(RunError::Failed(text)))
                        }
                        Err(ResultError::Exception(err)) => Err(self.failure(&ctx, err)),
                    }
                }
                PromiseState::Rejected => {
                    let thrown = match promise.result::<Value>() {
                        Some(Err(rquickjs::Error::Exception)) => ctx.catch(),
                        _ => Value::new_undefined(ctx.clone()),
                    };
                    Err(self.thrown(&ctx, &thrown))
                }
            }
        })
    }

    /// Acts on one message from the host.
    fn handle(&self, reply: Reply) -> Result<(), RunError> {
        let (id, value) = match reply {
            Reply::Cancel => return Err(RunError::Cancelled),
            Reply::Settle { id, value } => (id, value),
        };
        if !self.host.take_outstanding(id) {
            tracing::debug!(
                id,
                "ignoring a settle for an agent call that is not outstanding"
            );
            return Ok(());
        }
        let Some(settle) = self.settle.clone() else {
            return Err(RunError::Engine("the prelude is not installed".to_owned()));
        };
        let text = value.to_string();
        self.engine.context.with(|ctx| {
            let settle = settle
                .restore(&ctx)
                .map_err(|err| self.failure(&ctx, err))?;
            let value: Value = ctx
                .json_parse(text)
                .map_err(|err| self.failure(&ctx, err))?;
            settle
                .call::<_, Value>((id as f64, value))
                .map(drop)
                .map_err(|err| self.failure(&ctx, err))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_engine_with_the_prelude_is_small() {
        let limits = Limits::default();
        let engine = Engine::new(&limits, Arc::new(AtomicBool::new(false))).unwrap();
        let (events, _receiver) = tokio::sync::mpsc::unbounded_channel();
        let host = Rc::new(Host::new(events, &limits));
        engine
            .context
            .with(|ctx| prelude::install(&ctx, &host, "{}", 100).map(drop))
            .unwrap();
        let usage = engine.runtime.memory_usage();
        println!(
            "QuickJS memory after the prelude: {} bytes in {} allocations",
            usage.malloc_size, usage.malloc_count
        );
        assert!(usage.malloc_size < 1024 * 1024, "{}", usage.malloc_size);
    }

    #[test]
    fn panic_payloads_become_text() {
        assert_eq!(panic_text(&"static"), "static");
        assert_eq!(panic_text(&String::from("owned")), "owned");
        assert_eq!(panic_text(&3_u8), "(no message)");
    }
}
