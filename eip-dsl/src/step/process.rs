//! `process`: the Service Activator. The step calls a `tower::Service` the program registered
//! under a name, and what the service answers goes on in place of the message.
//!
//! ```yaml
//! steps:
//!   - process: price-lookup
//! ```
//!
//! The program registers the service with [`FlowBuilder::service`](crate::builder::FlowBuilder::service)
//! or in [`Services`] given to [`load_file_with`](crate::flow_file::load_file_with), so a flow
//! file can run the program's own code. The `eip` command registers none: a flow that names a
//! service is refused there, with the name.
//!
//! A service that fails fails the route for that message: it is handed back to the route's
//! consumer and redelivered by the channel's redelivery policy, then dead-lettered with reason
//! `max-redeliveries` and the service's error (or sent to the route's `on-error` channel).
//! With its own `on-error: CHANNEL` (`- process: {service: NAME, on-error: CHANNEL}`) the step
//! sends the message it failed on there at once instead, with reason `rejected`; see
//! [`on_error`](super::on_error). The dry run (`eip route`) does not call the
//! service: the message goes on unchanged there.
//!
//! ```yaml
//! steps:
//!   - process: {service: price-lookup, timeout: 2s, concurrency: 4, circuit-breaker: {failures: 5, reset: 30s}}
//! ```
//!
//! `timeout`, `concurrency` and `circuit-breaker` limit the calls as for every step that calls
//! out (see [`calls`](super::calls)): a call past its deadline, or refused by the open
//! breaker, fails the route for the message like an error of the service.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use eip_core::MessageBus;
use eip_core::message::Message;
use futures::future::BoxFuture;
use tower::util::BoxCloneService;
use tower::{BoxError, Service, ServiceExt};

use super::calls::{self, Call, CallLimits};
use super::{Entry, Made, RouteStep, StepConfig, StepKind};
use crate::compile::CompileError;
use crate::diagnostic::{Check, suggest_key};
use crate::settings::Settings;

pub(super) static PROCESS: StepKind = StepKind {
    name: "process",
    feature: None,
    main: "service",
    keys: &[
        "service",
        "timeout",
        "concurrency",
        "circuit-breaker",
        "on-error",
    ],
    check,
};

/// A service of the program, shared by every step that names it.
type Shared = Arc<Mutex<BoxCloneService<Message, Message, BoxError>>>;

/// The services a program offers its flows, by name.
#[derive(Clone, Default)]
pub struct Services {
    by_name: BTreeMap<String, Shared>,
}

impl Services {
    /// No service.
    pub fn new() -> Self {
        Services::default()
    }

    /// Adds `service` under `name` (replacing one of that name). Each message a `process`
    /// step hands it is answered by the message that goes on.
    pub fn add<S>(mut self, name: impl Into<String>, service: S) -> Self
    where
        S: Service<Message, Response = Message> + Clone + Send + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send + 'static,
    {
        let service = BoxCloneService::new(service.map_err(Into::into));
        self.by_name
            .insert(name.into(), Arc::new(Mutex::new(service)));
        self
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    fn get(&self, name: &str) -> Option<&Shared> {
        self.by_name.get(name)
    }
}

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// A checked `process` step.
#[derive(Clone)]
pub struct ProcessConfig {
    /// The service's name.
    pub service: String,
    shared: Shared,
    limits: CallLimits,
}

impl fmt::Debug for ProcessConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessConfig")
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    let name = settings.required_text(
        check,
        "service",
        "name a service the program registered: `process: NAME`",
    )?;
    let Some(shared) = entry.services.get(&name.value) else {
        let known: Vec<&str> = entry.services.names().collect();
        let help = match known.is_empty() {
            true => "`process` runs a service the program registered (FlowBuilder::service, or \
                     Services given to load_file_with); this program registered none"
                .to_owned(),
            false => suggest_key(&name.value, &known),
        };
        settings.report_value(
            check,
            "service",
            &name,
            format!("no service `{}` is registered", name.value),
            Some(&help),
        );
        return None;
    };
    let limits = calls::read(check, settings, false)?;
    Some(Box::new(ProcessConfig {
        service: name.value,
        shared: shared.clone(),
        limits,
    }))
}

impl StepConfig for ProcessConfig {
    fn describe(&self) -> String {
        let limits = self.limits.describe();
        match limits.is_empty() {
            true => format!("process {}", self.service),
            false => format!("process {} ({limits})", self.service),
        }
    }

    fn label(&self) -> Option<String> {
        Some(format!("process {}", self.service))
    }

    fn build(&self, _bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        let shared = self.shared.clone();
        // A clone per call: the shared service is only locked to be cloned, never across a call.
        let service = tower::service_fn(move |msg: Message| {
            let service = shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            service.oneshot(msg)
        });
        Ok(Box::new(Process {
            call: self.limits.wrap(service),
        }))
    }
}

/// The program's service behind the step's limits, built once: its clones share them.
struct Process {
    call: Call<Message, Message>,
}

impl fmt::Debug for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Process").finish_non_exhaustive()
    }
}

impl RouteStep for Process {
    /// The dry run does not call the program's code: the message goes on unchanged.
    fn decide(&self, msg: Message) -> Made {
        Made::next(msg)
    }

    fn calls_out(&self) -> bool {
        true
    }

    fn call(&self, msg: Message) -> BoxFuture<'_, Result<Made, BoxError>> {
        let service = self.call.clone();
        Box::pin(async move {
            let answer = service.oneshot(msg).await?;
            Ok(Made::next(answer))
        })
    }
}
