//! The picture of a plan before any format: nodes with a shape, edges with a label and a line
//! style. Every format draws this one model, so the three agree on what a flow contains.

use std::collections::HashMap;

use eip_core::channel::ChannelKind;
use eip_core::router::Strategy;

use crate::kind::{self, Drawing};
use crate::plan::adapter::{AdapterKind, AdapterPlan};
use crate::plan::{
    ActionPlan, ChannelPlan, DEAD_LETTERS, ExchangePlan, JoinPlan, Plan, RecipientsPlan, RoutePlan,
    TargetRef,
};

/// How a node is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A point-to-point channel: a plain box.
    PointToPoint,
    /// A publish-subscribe channel: a rounded box.
    PublishSubscribe,
    /// A topic exchange: a hexagon.
    Exchange,
    /// A route (the router that consumes a channel): a diamond.
    Router,
    /// A channel adapter, where messages enter or leave the flow: a parallelogram (the
    /// flowchart's input/output), or a cylinder for one reading or writing a database.
    Adapter(AdapterKind),
    /// A name the plan refers to but does not declare (a plan built by hand can have one):
    /// a dashed box, so the mistake is visible rather than silently dropped.
    Undeclared,
}

impl Shape {
    /// Whether the node is drawn as a database (a cylinder): an adapter whose kind reads or
    /// writes one (`sql-in`, `sql-out`).
    pub(crate) fn is_database(self) -> bool {
        match self {
            Shape::Adapter(id) => kind::of(id).is_some_and(|k| k.drawing == Drawing::Database),
            _ => false,
        }
    }
}

/// A node: a channel, an exchange, a route or a channel adapter.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// A safe identifier, unique in the graph and the same for the same plan.
    pub id: String,
    /// The name, control characters replaced by spaces.
    pub label: String,
    /// A second line: `durable` and a channel's datatype schema, a header recipient list's
    /// header, an adapter's kind and endpoint.
    pub detail: Option<String>,
    /// The shape.
    pub shape: Shape,
    /// Whether this is a datatype channel (drawn with a double border).
    pub datatype: bool,
    /// Whether this is a durable channel (`durable` on its second line).
    pub durable: bool,
}

/// How an edge's line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    /// Messages flowing.
    Solid,
    /// An archival join.
    Dashed,
    /// Where failures go: invalid messages and dead letters.
    Dotted,
}

/// An edge between two nodes, by index.
#[derive(Debug, Clone)]
pub(crate) struct Edge {
    /// The source node.
    pub from: usize,
    /// The destination node.
    pub to: usize,
    /// What the edge means, if more than "messages go here".
    pub label: Option<String>,
    /// The line style.
    pub line: Line,
}

/// A plan as nodes and edges.
#[derive(Debug, Clone, Default)]
pub(crate) struct Graph {
    /// Channels, then exchanges, then routes, then adapters, then undeclared names in order of
    /// first use.
    pub nodes: Vec<Node>,
    /// Per channel (invalid, dead letters), per route (in, targets, discard, wire tap), per join,
    /// per exchange (bindings, alternate), per adapter (to or from its channel), in plan order.
    pub edges: Vec<Edge>,
}

impl Graph {
    /// The graph of `plan`. Never fails: a reference to an undeclared name becomes an
    /// [`Undeclared`](Shape::Undeclared) node.
    pub(crate) fn from_plan(plan: &Plan) -> Graph {
        let mut b = Builder::default();
        for (i, c) in plan.channels.iter().enumerate() {
            let node = b.push(channel_node(i, c));
            b.channels.entry(c.name.as_str()).or_insert(node);
        }
        for (i, x) in plan.exchanges.iter().enumerate() {
            let node = b.push(exchange_node(i, x));
            b.exchanges.entry(x.name.as_str()).or_insert(node);
        }
        let routers: Vec<usize> = plan
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| b.push(router_node(i, r)))
            .collect();
        let adapters: Vec<usize> = plan
            .adapters
            .iter()
            .enumerate()
            .map(|(i, a)| b.push(adapter_node(i, a)))
            .collect();

        for c in &plan.channels {
            b.channel_edges(c);
        }
        for (r, &router) in plan.routes.iter().zip(&routers) {
            b.route_edges(r, router);
        }
        for j in &plan.joins {
            b.join_edge(j);
        }
        for x in &plan.exchanges {
            b.exchange_edges(x);
        }
        for (a, &adapter) in plan.adapters.iter().zip(&adapters) {
            b.adapter_edge(a, adapter);
        }
        Graph {
            nodes: b.nodes,
            edges: b.edges,
        }
    }
}

/// A channel's node: a plain box for point-to-point, a rounded one for publish-subscribe.
fn channel_node(index: usize, c: &ChannelPlan) -> Node {
    let shape = match c.kind {
        ChannelKind::PointToPoint => Shape::PointToPoint,
        ChannelKind::PublishSubscribe => Shape::PublishSubscribe,
    };
    Node {
        id: node_id('c', index, &c.name),
        label: clean(&c.name),
        detail: channel_detail(c),
        shape,
        datatype: c.datatype.is_some(),
        // Drawn as durable: a broker keeps its messages across restarts too.
        durable: c.durable || c.broker.is_some(),
    }
}

/// An exchange's node: a hexagon.
fn exchange_node(index: usize, x: &ExchangePlan) -> Node {
    Node {
        id: node_id('x', index, &x.name),
        label: clean(&x.name),
        detail: None,
        shape: Shape::Exchange,
        datatype: false,
        durable: false,
    }
}

/// A route's node: a diamond, with on its second line the header a recipient list reads and
/// the route's `concurrency` above 1.
fn router_node(index: usize, r: &RoutePlan) -> Node {
    let header = match &r.action {
        ActionPlan::RecipientList(RecipientsPlan::Header(h)) => {
            Some(format!("recipients from header {h}"))
        }
        _ => None,
    };
    let concurrency = (r.concurrency > 1).then(|| format!("concurrency {}", r.concurrency));
    let parts: Vec<String> = header.into_iter().chain(concurrency).collect();
    let detail = (!parts.is_empty()).then(|| clean(&parts.join(", ")));
    Node {
        id: node_id('r', index, &r.name),
        label: clean(&r.name),
        detail,
        shape: Shape::Router,
        datatype: false,
        durable: false,
    }
}

/// A channel's second line: `durable` or the broker keeping it, then its datatype schema
/// (`durable, datatype: PATH`, `in rabbitmq queue orders`).
fn channel_detail(c: &ChannelPlan) -> Option<String> {
    let durable = c.durable.then(|| "durable".to_owned());
    let broker = c
        .broker
        .as_ref()
        .map(|b| format!("in {}", b.place.describe()));
    let datatype = c.datatype.as_ref().map(|d| format!("datatype: {}", d.path));
    let parts: Vec<String> = durable.into_iter().chain(broker).chain(datatype).collect();
    (!parts.is_empty()).then(|| clean(&parts.join(", ")))
}

/// An adapter's node: its name, then its kind and endpoint (`http-in · POST http://…/orders`).
/// Its id starts with `a`, so it can not collide with a channel, exchange or route.
fn adapter_node(index: usize, a: &AdapterPlan) -> Node {
    let kind = a.kind();
    Node {
        id: node_id('a', index, &a.name),
        label: clean(&a.name),
        detail: Some(clean(&format!("{} · {}", kind.as_str(), a.endpoint()))),
        shape: Shape::Adapter(kind),
        datatype: false,
        durable: false,
    }
}

/// Collects nodes and edges, resolving names to node indices.
#[derive(Default)]
struct Builder<'p> {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    channels: HashMap<&'p str, usize>,
    exchanges: HashMap<&'p str, usize>,
    // Keyed by (is an exchange, name): an undeclared channel and exchange of the same name
    // are two different mistakes.
    undeclared: HashMap<(Dashed, &'p str), usize>,
}

/// What a dashed node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Dashed {
    /// A channel the plan names and does not declare.
    Channel,
    /// An exchange the plan names and does not declare.
    Exchange,
    /// A template: a destination each message computes.
    Computed,
}

impl<'p> Builder<'p> {
    fn push(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn channel(&mut self, name: &'p str) -> usize {
        match self.channels.get(name) {
            Some(&i) => i,
            None => self.undeclared(false, name),
        }
    }

    fn exchange(&mut self, name: &'p str) -> usize {
        match self.exchanges.get(name) {
            Some(&i) => i,
            None => self.undeclared(true, name),
        }
    }

    fn target(&mut self, target: &'p TargetRef) -> usize {
        match target {
            TargetRef::Channel(name) => self.channel(name),
            TargetRef::Exchange(name) => self.exchange(name),
            // Drawn dashed like a name the plan does not declare: which channel it is, each
            // message decides.
            TargetRef::Template(text) => self.dashed(Dashed::Computed, text),
        }
    }

    fn undeclared(&mut self, exchange: bool, name: &'p str) -> usize {
        let kind = match exchange {
            true => Dashed::Exchange,
            false => Dashed::Channel,
        };
        self.dashed(kind, name)
    }

    /// A dashed node: a name the plan does not declare, or a destination computed per message.
    fn dashed(&mut self, kind: Dashed, name: &'p str) -> usize {
        if let Some(&i) = self.undeclared.get(&(kind, name)) {
            return i;
        }
        let detail = match kind {
            Dashed::Channel => "undeclared channel",
            Dashed::Exchange => "undeclared exchange",
            Dashed::Computed => "computed per message",
        };
        let i = self.push(Node {
            id: node_id('u', self.undeclared.len(), name),
            label: clean(name),
            detail: Some(detail.to_owned()),
            shape: Shape::Undeclared,
            datatype: false,
            durable: false,
        });
        self.undeclared.insert((kind, name), i);
        i
    }

    fn edge(&mut self, from: usize, to: usize, label: Option<String>, line: Line) {
        self.edges.push(Edge {
            from,
            to,
            label: label.map(|l| clean(&l)),
            line,
        });
    }
}

/// The edges of each part of a plan, in the order [`Graph::edges`] lists them.
impl<'p> Builder<'p> {
    /// A channel's failure edges: to its invalid message channel and its own dead letter
    /// channel.
    fn channel_edges(&mut self, c: &'p ChannelPlan) {
        let from = self.channel(&c.name);
        if let Some(d) = &c.datatype {
            let to = self.channel(&d.invalid);
            self.edge(from, to, Some("invalid".into()), Line::Dotted);
        }
        // Every channel has the default dead letter channel; drawing that for each would
        // bury the flow, so only a channel's own choice is drawn.
        if let Some(dl) = c.dead_letter.as_deref().filter(|dl| *dl != DEAD_LETTERS) {
            let to = self.channel(dl);
            self.edge(from, to, Some("dead letters".into()), Line::Dotted);
        }
    }

    /// A route's edges: in from its channel (labelled with what its steps do), out to its
    /// targets, then to the channels its steps send to (discard channels, wire taps).
    fn route_edges(&mut self, r: &'p RoutePlan, router: usize) {
        let from = self.channel(&r.from);
        self.edge(from, router, steps_label(r), Line::Solid);
        self.action_edges(&r.action, router);
        for (channel, label) in step_channels(r) {
            let to = self.channel(channel);
            self.edge(router, to, Some(label.into()), Line::Solid);
        }
    }

    /// The edges from a route to where its action sends: each labelled with its clause
    /// (`when …`, `otherwise`, `recipients`, `round-robin`, `failover N`). A recipient list
    /// read from a header has none.
    fn action_edges(&mut self, action: &'p ActionPlan, router: usize) {
        match action {
            ActionPlan::To(targets) => {
                for t in targets {
                    let to = self.target(t);
                    self.edge(router, to, None, Line::Solid);
                }
            }
            ActionPlan::Choice { when, otherwise } => {
                for (p, t) in when {
                    let to = self.target(t);
                    self.edge(router, to, Some(format!("when {p}")), Line::Solid);
                }
                if let Some(t) = otherwise {
                    let to = self.target(t);
                    self.edge(router, to, Some("otherwise".into()), Line::Solid);
                }
            }
            ActionPlan::RecipientList(RecipientsPlan::Fixed(targets)) => {
                for t in targets {
                    let to = self.target(t);
                    self.edge(router, to, Some("recipients".into()), Line::Solid);
                }
            }
            ActionPlan::RecipientList(RecipientsPlan::Header(_)) => {}
            // Round robin's targets are equals; failover's are tried in order.
            ActionPlan::LoadBalance { targets, strategy } => {
                for (n, t) in targets.iter().enumerate() {
                    let label = match strategy {
                        Strategy::RoundRobin => "round-robin".to_owned(),
                        Strategy::Failover => format!("failover {}", n + 1),
                    };
                    let to = self.target(t);
                    self.edge(router, to, Some(label), Line::Solid);
                }
            }
        }
    }

    /// A join's edge, labelled with its hop budget, archival and filter; dashed if archival.
    fn join_edge(&mut self, j: &'p JoinPlan) {
        let from = self.channel(&j.from);
        let to = self.channel(&j.to);
        let mut label = format!("join hops={}", j.hops);
        if j.archival {
            label.push_str(", archival");
        }
        if let Some(p) = &j.filter {
            label.push_str(&format!(", filter {p}"));
        }
        let line = if j.archival {
            Line::Dashed
        } else {
            Line::Solid
        };
        self.edge(from, to, Some(label), line);
    }

    /// An exchange's edges: one per binding and bound channel, labelled with the binding's
    /// key, then to its alternate channel.
    fn exchange_edges(&mut self, x: &'p ExchangePlan) {
        let from = self.exchange(&x.name);
        for binding in &x.bindings {
            let key = binding
                .key
                .as_ref()
                .map_or_else(|| "(all)".to_owned(), |k| k.as_str().to_owned());
            for ch in &binding.to {
                let to = self.channel(ch);
                self.edge(from, to, Some(key.clone()), Line::Solid);
            }
        }
        if let Some(alt) = &x.alternate {
            let to = self.channel(alt);
            self.edge(from, to, Some("alternate".into()), Line::Solid);
        }
    }

    /// An adapter's edge: into its channel if inbound, out of it if outbound.
    fn adapter_edge(&mut self, a: &'p AdapterPlan, adapter: usize) {
        let channel = self.channel(&a.channel);
        if a.is_inbound() {
            self.edge(adapter, channel, None, Line::Solid);
        } else {
            self.edge(channel, adapter, None, Line::Solid);
        }
    }
}

/// The longest name part kept in a node id; the index already makes ids unique.
const MAX_ID_NAME: usize = 32;

/// A node id: a kind letter, the index among its kind, and the name with everything but
/// ASCII letters and digits turned into `_`. Valid unquoted in DOT, Mermaid and XML, never a
/// keyword of any of them, unique because of the kind and index.
pub(crate) fn node_id(kind: char, index: usize, name: &str) -> String {
    let mut id = format!("{kind}{index}_");
    for c in name.chars().take(MAX_ID_NAME) {
        id.push(if c.is_ascii_alphanumeric() { c } else { '_' });
    }
    id
}

/// `s` with control characters (newlines, tabs, NUL, ...) replaced by spaces: a label is one
/// line, and some formats can not hold them at all.
pub(crate) fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// What a route's steps do to the messages on their way to its router, as the label of the
/// edge from its channel (wire taps are drawn as edges of their own).
fn steps_label(route: &RoutePlan) -> Option<String> {
    let parts: Vec<String> = route
        .steps
        .iter()
        .filter_map(|s| s.config.label())
        .collect();
    (!parts.is_empty()).then(|| parts.join(" → "))
}

/// The channels a route's steps send to, with the label of their edge, in step order, each
/// step's `on-error` channel after its own; then the route's `on-error` channel.
fn step_channels(route: &RoutePlan) -> Vec<(&str, &'static str)> {
    route
        .steps
        .iter()
        .flat_map(|s| {
            let mut channels = s.config.channels();
            channels.extend(on_error(&s.on_error));
            channels
        })
        .chain(on_error(&route.on_error))
        .collect()
}

/// The edge of an `on-error:` channel, if there is one.
fn on_error(plan: &Option<crate::plan::OnErrorPlan>) -> Option<(&str, &'static str)> {
    plan.as_ref().map(|p| (p.to.as_str(), "on error"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_keep_ascii_alphanumerics_only() {
        assert_eq!(node_id('c', 3, "orders.in-2"), "c3_orders_in_2");
        assert_eq!(node_id('r', 0, "é\"<x>"), "r0____x_");
    }

    #[test]
    fn node_ids_of_names_differing_in_punctuation_differ_by_index() {
        assert_ne!(node_id('c', 0, "a.b"), node_id('c', 1, "a-b"));
    }

    #[test]
    fn clean_replaces_control_characters() {
        assert_eq!(clean("a\nb\t\0c"), "a b  c");
    }
}
