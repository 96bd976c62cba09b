//! A flow compiled from a flow file in a scratch directory and started, with its outputs
//! collected, to reload versions of that file into.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eip_core::Message;
use eip_dsl::compile::{self, Flow, RunningFlow};
use eip_dsl::control::RuntimeChanges;
use eip_dsl::control::reload::{FlowFile, NotReloaded, Reloaded};
use eip_dsl::load;

use super::scratch::Scratch;

/// How long a reload waits for what it drains, in these tests.
pub const DRAIN: Duration = Duration::from_secs(2);

/// A started flow, its file, and what reached its outputs: (channel, payload) in order.
pub struct Running {
    _dir: Scratch,
    path: PathBuf,
    pub flow: Flow,
    pub running: RunningFlow,
    pub file: FlowFile,
    pub runtime: RuntimeChanges,
    #[allow(dead_code)] // Read by the methods some test files use.
    outputs: Arc<Mutex<Vec<(String, Message)>>>,
}

/// The flow `text`, compiled (every channel in memory) and started.
pub async fn running(text: &str) -> Running {
    let dir = Scratch::new("reload");
    let path = dir.0.join("flow.yaml");
    std::fs::write(&path, text).unwrap();
    let plan = load::load_file(&path).unwrap_or_else(|e| panic!("{}", e.render()));
    let flow = compile::compile(&plan).unwrap();
    let file = FlowFile::new(&path, plan).unwrap();
    let (runtime, _) = RuntimeChanges::open(flow.view()).await.unwrap();
    let outputs = Arc::new(Mutex::new(Vec::new()));
    let kept = outputs.clone();
    let mut running = flow.start(Arc::new(move |channel: &str, msg: &Message| {
        kept.lock().unwrap().push((channel.to_owned(), msg.clone()));
    }));
    running.attach(flow.connect_adapters().await.unwrap());
    Running {
        _dir: dir,
        path,
        flow,
        running,
        file,
        runtime,
        outputs,
    }
}

#[allow(dead_code)] // Not every test file sends or reads outputs.
impl Running {
    /// Writes `text` as the flow file and reloads it.
    pub async fn reload(&mut self, text: &str) -> Result<Reloaded, NotReloaded> {
        std::fs::write(&self.path, text).unwrap();
        self.file
            .reload(&mut self.running, &self.runtime, DRAIN)
            .await
    }

    /// Sends a message with `payload` to the channel or exchange `to`.
    pub async fn send(&self, to: &str, payload: &str) {
        let msg = Message::builder(payload.to_owned()).build();
        self.flow.bus().publish(to, msg).await.unwrap();
    }

    /// What reached the output `channel` so far.
    pub fn outputs_on(&self, channel: &str) -> Vec<Message> {
        let outputs = self.outputs.lock().unwrap();
        (outputs.iter())
            .filter(|(c, _)| c == channel)
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Waits (5 s at most) until `n` messages reached the output `channel`; what did.
    pub async fn wait_outputs(&self, channel: &str, n: usize) -> Vec<Message> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let out = self.outputs_on(channel);
            if out.len() >= n || Instant::now() > deadline {
                return out;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
