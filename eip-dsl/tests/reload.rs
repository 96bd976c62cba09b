//! Reloading a flow file into a running flow: joins and bindings that changed are applied at
//! once; a file with problems, or one that changes anything else, changes nothing and says
//! why; a change of comments or layout is no change; what was added at runtime stays.

mod support {
    pub mod scratch;
}

use std::path::PathBuf;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::compile::{self, Flow};
use eip_dsl::control::reload::{FlowFile, NotReloaded, Reloaded};
use eip_dsl::control::{JoinChange, RuntimeChanges};
use eip_dsl::load;
use support::scratch::Scratch;

const FLOW: &str = "
channels:
  quotes: {kind: publish-subscribe}
  nyse: {kind: point-to-point}
  archive: {kind: point-to-point}
  unrouted: {kind: point-to-point}
joins:
  - {from: quotes, to: archive, archival: true}
exchanges:
  market:
    alternate: unrouted
    bindings:
      - {key: 'stock.#', to: [archive]}
";

struct Running {
    _dir: Scratch,
    path: PathBuf,
    flow: Flow,
    file: FlowFile,
    runtime: RuntimeChanges,
}

async fn running(text: &str) -> Running {
    let dir = Scratch::new("reload");
    let path = dir.0.join("flow.yaml");
    std::fs::write(&path, text).unwrap();
    let plan = load::load_file(&path).unwrap_or_else(|e| panic!("{}", e.render()));
    let flow = compile::compile(&plan).unwrap();
    let file = FlowFile::new(&path, plan).unwrap();
    let (runtime, _) = RuntimeChanges::open(flow.view()).await.unwrap();
    Running {
        _dir: dir,
        path,
        flow,
        file,
        runtime,
    }
}

impl Running {
    fn reload(&mut self, text: &str) -> Result<Reloaded, NotReloaded> {
        std::fs::write(&self.path, text).unwrap();
        self.file.reload(&self.flow.view(), &self.runtime)
    }

    fn taken(&self, name: &str) -> u64 {
        match self.flow.bus().channel(name) {
            Ok(Channel::PointToPoint(c)) => c.stats().accepted,
            _ => panic!("no queue {name}"),
        }
    }

    /// A quote published on `quotes`, and one through `market`.
    async fn quote(&self) {
        let msg = || Message::builder("{}").subject("stock.ibm.nyse").build();
        self.flow.bus().publish("quotes", msg()).await.unwrap();
        self.flow.bus().publish("market", msg()).await.unwrap();
    }
}

#[tokio::test]
async fn changed_joins_and_bindings_are_applied_at_once() {
    let mut flow = running(FLOW).await;
    flow.quote().await;
    assert_eq!((flow.taken("archive"), flow.taken("nyse")), (2, 0));

    let changed = FLOW
        .replace(
            "  - {from: quotes, to: archive, archival: true}",
            "  - {from: quotes, to: nyse}",
        )
        .replace(
            "{key: 'stock.#', to: [archive]}",
            "{key: 'stock.*.nyse', to: [nyse]}",
        );
    let Ok(Reloaded::Applied(said)) = flow.reload(&changed) else {
        panic!("applied")
    };
    assert_eq!(
        said,
        [
            "join quotes -> archive removed",
            "join quotes -> nyse added",
            "binding market: stock.# -> archive removed",
            "binding market: stock.*.nyse -> nyse added",
        ]
    );
    flow.quote().await;
    assert_eq!((flow.taken("archive"), flow.taken("nyse")), (2, 2));
    assert!(matches!(flow.reload(&changed), Ok(Reloaded::Unchanged)));
}

#[tokio::test]
async fn a_file_with_problems_changes_nothing() {
    let mut flow = running(FLOW).await;
    let broken = FLOW.replace("to: archive, archival", "to: archve, archival");
    let Err(NotReloaded::Invalid(errors)) = flow.reload(&broken) else {
        panic!("refused")
    };
    assert!(
        errors.render().contains("did you mean `archive`?"),
        "{}",
        errors.render()
    );
    flow.quote().await;
    assert_eq!(
        flow.taken("archive"),
        2,
        "the old join and binding are in place"
    );
    // Once the file is mended, reloading it is no change.
    assert!(matches!(flow.reload(FLOW), Ok(Reloaded::Unchanged)));
}

#[tokio::test]
async fn changing_anything_else_needs_a_restart_and_changes_nothing() {
    let mut flow = running(FLOW).await;
    let more = FLOW.replace(
        "  unrouted: {kind: point-to-point}",
        "  unrouted: {kind: point-to-point}\n  bonds: {kind: point-to-point}",
    );
    let more = more.replace(
        "{from: quotes, to: archive, archival: true}",
        "{from: quotes, to: nyse}",
    );
    let err = flow.reload(&more).unwrap_err();
    assert!(matches!(err, NotReloaded::NeedsRestart(ref what) if what == &["`channels`"]));
    assert_eq!(
        err.to_string(),
        "the file changes `channels`: that needs a restart (only joins and bindings change \
         while the flow runs)"
    );
    flow.quote().await;
    assert_eq!(
        (flow.taken("archive"), flow.taken("nyse")),
        (2, 0),
        "the join was not applied"
    );

    let other_alternate = FLOW.replace("alternate: unrouted", "alternate: nyse");
    let err = flow.reload(&other_alternate).unwrap_err();
    assert!(
        err.to_string()
            .contains("`exchanges` (beyond their bindings)"),
        "{err}"
    );
}

#[tokio::test]
async fn comments_and_layout_are_no_change() {
    let mut flow = running(FLOW).await;
    let relaid = format!(
        "# the same flow, written otherwise\n{}",
        FLOW.replace("{kind: point-to-point}", "\n    kind: point-to-point")
    );
    assert!(matches!(flow.reload(&relaid), Ok(Reloaded::Unchanged)));
}

#[tokio::test]
async fn a_join_added_at_runtime_outlives_the_file_s_twin() {
    let with_nyse = FLOW.replace(
        "  - {from: quotes, to: archive, archival: true}",
        "  - {from: quotes, to: archive, archival: true}\n  - {from: quotes, to: nyse}",
    );
    let mut flow = running(&with_nyse).await;
    let twin = JoinChange {
        from: "quotes".into(),
        to: "nyse".into(),
        filter: None,
        hops: None,
        archival: false,
    };
    flow.runtime.add_join(twin).await.unwrap();
    let Ok(Reloaded::Applied(said)) = flow.reload(FLOW) else {
        panic!("applied")
    };
    assert_eq!(said, ["join quotes -> nyse removed"]);
    flow.quote().await;
    assert_eq!(flow.taken("nyse"), 1, "the runtime join still forwards");
    assert_eq!(flow.runtime.joins().len(), 1);
}
