//! The Rust builder against the flow file: the same flow written both ways is the same spec,
//! compiles to flows that route every message alike, and a mistake made in code is reported
//! by validation as the same mistake in a file would be.

use std::path::PathBuf;
use std::time::Duration;

use eip_dsl::builder::{
    BuildError, ChannelBuilder, FLOW_NAME, FlowBuilder, channel, exchange, join, route, store,
};
use eip_dsl::compile::{InputMessage, Report};
use eip_dsl::core::channel::Overflow;
use eip_dsl::diagnostic::{FlowErrors, Problem};
use eip_dsl::load::parse_str;
use eip_dsl::plan::{Plan, StorePlan};
use eip_dsl::spec::{FlowSpec, Located, RecipientsSpec};

fn flows() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/flows")
}

fn read(name: &str) -> String {
    let path = flows().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The spec a flow file is read into, with every position cleared.
fn file_spec(yaml: &str) -> FlowSpec {
    let spec = parse_str(yaml, "flow.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
    unplaced(spec)
}

fn clear<T>(value: &mut Located<T>) {
    value.at = None;
}

fn clear_opt<T>(value: &mut Option<Located<T>>) {
    if let Some(value) = value {
        value.at = None;
    }
}

fn clear_names(names: &mut Located<Vec<Located<String>>>) {
    clear(names);
    names.value.iter_mut().for_each(clear);
}

/// `spec` without positions, as a flow made in code has none.
fn unplaced(mut spec: FlowSpec) -> FlowSpec {
    for (name, channel) in &mut spec.channels {
        clear(name);
        channel.at = None;
        clear(&mut channel.kind);
        clear_opt(&mut channel.capacity);
        clear_opt(&mut channel.datatype);
        clear_opt(&mut channel.invalid);
        clear_opt(&mut channel.dead_letter);
        clear_opt(&mut channel.time_to_live);
        clear_opt(&mut channel.overflow);
        clear_opt(&mut channel.durable);
        if let Some(r) = &mut channel.redelivery {
            r.at = None;
            clear_opt(&mut r.max_attempts);
            clear_opt(&mut r.initial_backoff);
            clear_opt(&mut r.max_backoff);
            clear_opt(&mut r.multiplier);
            clear_opt(&mut r.jitter);
        }
    }
    for route in &mut spec.routes {
        route.at = None;
        clear_opt(&mut route.name);
        clear(&mut route.from);
        clear_opt(&mut route.filter);
        clear_opt(&mut route.discard);
        clear_opt(&mut route.wire_tap);
        if let Some(to) = &mut route.to {
            clear_names(to);
        }
        if let Some(choice) = &mut route.choice {
            clear(choice);
            for clause in &mut choice.value {
                clause.at = None;
                clear(&mut clause.when);
                clear(&mut clause.to);
            }
        }
        clear_opt(&mut route.otherwise);
        if let Some(list) = &mut route.recipient_list {
            clear(list);
            match &mut list.value {
                RecipientsSpec::Fixed(names) => names.iter_mut().for_each(clear),
                RecipientsSpec::Header(header) => clear(header),
            }
        }
    }
    for join in &mut spec.joins {
        join.at = None;
        clear(&mut join.from);
        clear(&mut join.to);
        clear_opt(&mut join.filter);
        clear_opt(&mut join.hops);
        clear_opt(&mut join.archival);
    }
    for (name, exchange) in &mut spec.exchanges {
        clear(name);
        exchange.at = None;
        clear_opt(&mut exchange.alternate);
        for binding in &mut exchange.bindings {
            binding.at = None;
            clear_opt(&mut binding.key);
            clear_names(&mut binding.to);
        }
    }
    if let Some(store) = &mut spec.store {
        store.at = None;
        clear_opt(&mut store.path);
        clear_opt(&mut store.max_bytes);
    }
    spec.reserved.iter_mut().for_each(clear);
    spec
}

/// `examples/flows/trading.yaml`, in Rust.
fn trading() -> FlowBuilder {
    trading_with(trade_requests())
}

/// The trading flow's datatype channel `trades.requests`.
fn trade_requests() -> ChannelBuilder {
    channel::point_to_point()
        .datatype("schemas/trade.json")
        .invalid("trades.invalid")
}

/// The trading flow with `requests` as its channel `trades.requests`.
fn trading_with(requests: ChannelBuilder) -> FlowBuilder {
    let queue = channel::point_to_point;
    FlowBuilder::new()
        .channel("trades.requests", requests)
        .channel("trades.invalid", queue())
        .channel("trades.buy", queue())
        .channel("trades.sell", queue())
        .channel("trades.approval", queue().durable())
        .channel("trades.audit", queue())
        .channel("quotes", channel::publish_subscribe())
        .channel("quotes.nyse", channel::publish_subscribe())
        .channel("quotes.archive", queue())
        .channel("unrouted", queue())
        .route(
            route::from("trades.requests")
                .name("trade-router")
                .wire_tap("trades.audit")
                .choice()
                .when("$.quantity > 10000", "trades.approval")
                .when(r#"$.side == "buy""#, "trades.buy")
                .when(r#"$.side == "sell""#, "trades.sell"),
        )
        .join(
            join::from("quotes")
                .to("quotes.nyse")
                .filter(r#"$.exchange == "NYSE""#)
                .hops(5),
        )
        .join(join::from("quotes").to("quotes.archive").archival())
        .exchange(
            "market",
            exchange::topic()
                .alternate("unrouted")
                .bind("stock.*.nyse", ["quotes.nyse"])
                .bind("stock.#", ["quotes"]),
        )
}

/// `examples/flows/join-chain.yaml`, in Rust.
fn join_chain() -> FlowBuilder {
    let mut flow = FlowBuilder::new();
    for i in 0..10 {
        flow = flow.channel(format!("channel{i}"), channel::publish_subscribe());
    }
    flow = flow.join(join::from("channel0").to("channel1").hops(5));
    for i in 1..9 {
        flow = flow.join(join::from(format!("channel{i}")).to(format!("channel{}", i + 1)));
    }
    flow
}

/// Both flows compiled, and their dry-run reports for every line of `input`.
fn reports(builder: &FlowBuilder, yaml_file: &str, input_file: &str) -> Vec<(Report, Report)> {
    let dir = flows();
    let from_code = builder
        .compile(&dir)
        .unwrap_or_else(|e| panic!("the builder's flow compiles: {e}"));
    let plan =
        eip_dsl::load::load_file(&dir.join(yaml_file)).unwrap_or_else(|e| panic!("{}", e.render()));
    let from_file = eip_dsl::compile::compile(&plan).expect("the file's flow compiles");
    read(input_file)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let input = InputMessage::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            let code = from_code
                .dry_run(&input)
                .expect("dry run of the builder's flow");
            let file = from_file
                .dry_run(&input)
                .expect("dry run of the file's flow");
            (code, file)
        })
        .collect()
}

fn expected(file: &str) -> Vec<serde_json::Value> {
    read(file)
        .lines()
        .map(|l| serde_json::from_str(l).expect("expected lines are JSON"))
        .collect()
}

#[test]
fn trading_flow_in_rust_is_the_trading_flow_file() {
    assert_eq!(
        trading().spec(),
        &file_spec(&read("trading.yaml")),
        "the builder and the file give the same spec"
    );
}

#[test]
fn trading_flow_in_rust_routes_every_message_as_the_file_does() {
    let reports = reports(&trading(), "trading.yaml", "trading.input.jsonl");
    let expected = expected("trading.expected.jsonl");
    assert_eq!(reports.len(), expected.len());
    for ((code, file), expected) in reports.iter().zip(&expected) {
        assert_eq!(code, file);
        let json = serde_json::to_value(code).expect("a report serializes");
        assert_eq!(&json, expected);
    }
    // Not every message goes the same way: the comparison covers routing, invalid messages,
    // dead letters and exchanges.
    assert!(reports.iter().any(|(r, _)| r.invalid.is_some()));
    assert!(reports.iter().any(|(r, _)| r.dead_letter.is_some()));
    assert!(reports.iter().any(|(r, _)| r.stored == ["unrouted"]));
}

/// The channels a plan marks durable, and its store.
fn durability(plan: &Plan) -> (Vec<&str>, &StorePlan) {
    let durable = plan
        .channels
        .iter()
        .filter(|c| c.durable)
        .map(|c| c.name.as_str())
        .collect();
    (durable, &plan.store)
}

#[test]
fn a_durable_trading_flow_in_rust_plans_as_the_file_does() {
    let yaml = read("trading.yaml");
    let requests = "invalid: trades.invalid}";
    assert!(
        yaml.contains(requests),
        "trading.yaml declares trades.requests"
    );
    let yaml = yaml.replacen(requests, "invalid: trades.invalid, durable: true}", 1)
        + "store: {path: data, max-bytes: 2 GiB}\n";
    let from_code = trading_with(trade_requests().durable())
        .channel("trades.settled", channel::point_to_point().durable())
        .store(store::embedded().path("data").max_bytes(2 << 30));
    let yaml = yaml.replacen(
        "channels:\n",
        "channels:\n  trades.settled: {kind: point-to-point, durable: true}\n",
        1,
    );
    let code_plan = from_code
        .plan(flows())
        .unwrap_or_else(|e| panic!("{}", e.render()));
    let file_plan = eip_dsl::load::load_str(&yaml, "trading.yaml", &flows())
        .unwrap_or_else(|e| panic!("{}", e.render()));
    let (mut code, store) = durability(&code_plan);
    let (mut file, file_store) = durability(&file_plan);
    code.sort_unstable();
    file.sort_unstable();
    assert_eq!((code.clone(), store), (file, file_store));
    assert_eq!(
        code,
        [
            "dead-letters",
            "trades.approval",
            "trades.invalid",
            "trades.requests",
            "trades.settled"
        ]
    );
    assert_eq!(store.max_bytes, Some(2 << 30));
}

#[test]
fn join_chain_in_rust_is_the_join_chain_file() {
    assert_eq!(join_chain().spec(), &file_spec(&read("join-chain.yaml")));
}

#[test]
fn join_chain_in_rust_stops_after_the_first_joins_hop_budget() {
    let reports = reports(&join_chain(), "join-chain.yaml", "join-chain.input.jsonl");
    assert_eq!(reports.len(), expected("join-chain.expected.jsonl").len());
    for ((code, file), expected) in reports.iter().zip(expected("join-chain.expected.jsonl")) {
        assert_eq!(code, file);
        assert_eq!(serde_json::to_value(code).expect("serializes"), expected);
    }
    let from_channel0 = &reports[0].0.stored;
    let through_channel6: Vec<String> = (0..=6).map(|i| format!("channel{i}")).collect();
    assert_eq!(from_channel0, &through_channel6);
}

/// Every method of every builder, next to the flow file using every key.
fn every_method() -> FlowBuilder {
    let queue = channel::point_to_point;
    FlowBuilder::new()
        .channel(
            "orders",
            queue()
                .capacity(500)
                .durable()
                .datatype("schemas/trade.json")
                .invalid("orders.invalid")
                .dead_letter("orders.dead")
                .time_to_live(Duration::from_secs(30))
                .redelivery(
                    channel::redelivery()
                        .max_attempts(3)
                        .initial_backoff(Duration::from_millis(250))
                        .max_backoff(Duration::from_secs(60))
                        .multiplier(1.5)
                        .jitter(0.1),
                ),
        )
        .channel("orders.invalid", queue())
        .channel("orders.dead", queue())
        .channel("orders.rejected", queue())
        .channel("orders.audit", queue())
        .channel("orders.eu", queue())
        .channel("orders.elsewhere", queue())
        .channel("billing", queue())
        .channel("invoices", queue())
        .channel(
            "prices",
            channel::publish_subscribe().overflow(Overflow::DropOldest),
        )
        .channel(
            "prices.live",
            channel::publish_subscribe().overflow(Overflow::Backpressure),
        )
        .channel("prices.archive", queue())
        .channel("unrouted", queue())
        .route(
            route::from("orders")
                .name("orders-by-region")
                .filter("exists($.id)")
                .discard("orders.rejected")
                .wire_tap("orders.audit")
                .choice()
                .when(r#"$.region == "eu""#, "orders.eu")
                .otherwise("orders.elsewhere"),
        )
        .route(route::from("orders.eu").to("billing").to("market"))
        .route(route::from("orders.elsewhere").recipient_list(["billing", "orders.audit"]))
        .route(route::from("billing").recipient_list_header("recipients"))
        .join(
            join::from("prices")
                .to("prices.live")
                .filter("$.live == true")
                .hops(0),
        )
        .join(join::from("prices").to("prices.archive").archival())
        .exchange(
            "market",
            exchange::topic()
                .alternate("unrouted")
                .bind("price.#", ["prices"])
                .bind_all(["prices.archive", "invoices"]),
        )
        .store(store::embedded().path("data").max_bytes(512 * 1024 * 1024))
}

const EVERY_KEY: &str = r#"
channels:
  orders:
    kind: point-to-point
    capacity: 500
    durable: true
    datatype: schemas/trade.json
    invalid: orders.invalid
    dead-letter: orders.dead
    time-to-live: 30s
    redelivery: {max-attempts: 3, initial-backoff: 250ms, max-backoff: 1m, multiplier: 1.5, jitter: 0.1}
  orders.invalid: {kind: point-to-point}
  orders.dead: {kind: point-to-point}
  orders.rejected: {kind: point-to-point}
  orders.audit: {kind: point-to-point}
  orders.eu: {kind: point-to-point}
  orders.elsewhere: {kind: point-to-point}
  billing: {kind: point-to-point}
  invoices: {kind: point-to-point}
  prices: {kind: publish-subscribe, overflow: drop-oldest}
  prices.live: {kind: publish-subscribe, overflow: backpressure}
  prices.archive: {kind: point-to-point}
  unrouted: {kind: point-to-point}
routes:
  - name: orders-by-region
    from: orders
    filter: 'exists($.id)'
    discard: orders.rejected
    wire-tap: orders.audit
    choice:
      - {when: '$.region == "eu"', to: orders.eu}
    otherwise: orders.elsewhere
  - {from: orders.eu, to: [billing, market]}
  - {from: orders.elsewhere, recipient-list: [billing, orders.audit]}
  - {from: billing, recipient-list: {header: recipients}}
joins:
  - {from: prices, to: prices.live, filter: '$.live == true', hops: 0}
  - {from: prices, to: prices.archive, archival: true}
exchanges:
  market:
    alternate: unrouted
    bindings:
      - {key: "price.#", to: [prices]}
      - {to: [prices.archive, invoices]}
store:
  path: data
  max-bytes: 512 MiB
"#;

#[test]
fn every_builder_method_sets_its_flow_file_key() {
    let flow = every_method();
    assert_eq!(flow.spec(), &file_spec(EVERY_KEY));
    let plan = flow
        .plan(flows())
        .unwrap_or_else(|e| panic!("{}", e.render()));
    let orders = plan.channel("orders").expect("declared");
    assert_eq!(orders.capacity, Some(500));
    assert_eq!(orders.time_to_live, Some(Duration::from_secs(30)));
    assert_eq!(orders.dead_letter.as_deref(), Some("orders.dead"));
    let redelivery = orders.redelivery.as_ref().expect("a redelivery policy");
    assert_eq!(redelivery.max_attempts, 3);
    assert_eq!(redelivery.initial_backoff, Duration::from_millis(250));
    assert_eq!(redelivery.max_backoff, Duration::from_secs(60));
    assert_eq!((redelivery.multiplier, redelivery.jitter), (1.5, 0.1));
    assert!(orders.durable);
    assert_eq!(plan.store.path, Some(flows().join("data")));
    assert_eq!(plan.store.max_bytes, Some(512 * 1024 * 1024));
    assert_eq!(plan.joins[0].hops, 0, "hops 0 is valid");
    assert!(plan.joins[1].archival);
    // The spec handed out is the one built; `into_spec` and `From` agree with `spec`.
    let spec = flow.spec().clone();
    assert_eq!(flow.clone().into_spec(), spec);
    assert_eq!(FlowSpec::from(flow), spec);
}

#[test]
fn every_builder_method_makes_a_flow_that_compiles_and_runs_its_routes() {
    let flow = every_method()
        .compile(flows())
        .unwrap_or_else(|e| panic!("{e}"));
    let input = |line: &str| InputMessage::parse(line).expect("a valid input line");
    let price = flow
        .dry_run(&input(
            r#"{"to": "market", "subject": "price.ibm", "payload": {"live": true}}"#,
        ))
        .expect("dry run");
    assert_eq!(
        price.stored,
        [
            "invoices",
            "prices",
            "prices.archive",
            "prices.archive",
            "prices.live"
        ]
    );
}

/// The problems of a flow made in code.
fn problems(flow: &FlowBuilder) -> Vec<Problem> {
    let errors: FlowErrors = flow.plan(flows()).expect_err("the flow is refused");
    assert_eq!(errors.name, FLOW_NAME);
    errors.problems
}

fn keyed<'p>(problems: &'p [Problem], key: &str) -> &'p Problem {
    problems
        .iter()
        .find(|p| p.key.as_deref() == Some(key))
        .unwrap_or_else(|| panic!("no problem at {key}: {problems:#?}"))
}

#[test]
fn a_misspelt_channel_gets_did_you_mean_help() {
    let flow = trading().route(route::from("trade.approval").to("trades.audit"));
    let problems = problems(&flow);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let problem = keyed(&problems, "routes[1].from");
    assert!(
        problem.message.contains("`trade.approval`"),
        "{}",
        problem.message
    );
    assert_eq!(
        problem.help.as_deref(),
        Some("did you mean `trades.approval`?")
    );
    assert_eq!(problem.at, None, "a name made in code has no position");
}

#[test]
fn a_join_from_a_queue_is_refused() {
    let flow = trading().join(join::from("trades.audit").to("quotes"));
    let problems = problems(&flow);
    let problem = keyed(&problems, "joins[2].from");
    assert!(
        problem
            .message
            .contains("a queue can not be the source of a join"),
        "{}",
        problem.message
    );
}

#[test]
fn a_bad_predicate_is_reported_where_it_goes_wrong() {
    let flow = trading().route(
        route::from("quotes.nyse")
            .filter(r#"$.bid > 100 and $.ask = 200"#)
            .to("trades.audit"),
    );
    let errors = flow.plan(flows()).expect_err("refused");
    let problem = keyed(&errors.problems, "routes[1].filter");
    assert!(
        problem.message.starts_with("invalid predicate"),
        "{}",
        problem.message
    );
    // The listing holds the routes' predicates first: the trading router's three `when`s,
    // then this filter on line 4. The parser stopped at the lone `=`, byte 22 of it.
    let at = problem.at.expect("a position inside the predicate");
    assert_eq!((at.line, at.column), (4, 23));
    let source = errors
        .source
        .as_deref()
        .expect("the listing of expressions");
    assert_eq!(source.get(at.offset..at.offset + at.len), Some("="));
    let text = errors.render();
    assert!(
        text.contains(
            "4 | $.bid > 100 and $.ask = 200\n  |                       ^\n  = key: routes[1].filter"
        ),
        "{text}"
    );
}

#[test]
fn a_bad_topic_pattern_points_at_the_word_at_fault() {
    let flow = trading().exchange(
        "bonds",
        exchange::topic().bind("bond.us*.#", ["trades.audit"]),
    );
    let errors = flow.plan(flows()).expect_err("refused");
    let problem = keyed(&errors.problems, r#"exchanges["bonds"].bindings[0].key"#);
    let at = problem.at.expect("a position inside the pattern");
    let source = errors.source.as_deref().expect("the listing");
    assert_eq!(source.get(at.offset..at.offset + at.len), Some("us*"));
}

#[test]
fn problems_outside_expressions_render_without_positions() {
    let flow = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .route(route::from("orders").to("shiped"));
    let errors = flow.plan(".").expect_err("refused");
    assert_eq!(errors.source, None);
    let text = errors.render();
    assert!(!text.contains("-->"), "{text}");
    assert!(text.contains("= key: routes[0].to[0]"), "{text}");
}

#[test]
fn a_route_given_two_ways_to_send_is_refused() {
    let flow = trading().route(
        route::from("quotes.nyse")
            .to("trades.audit")
            .choice()
            .when("$.bid > 1", "trades.audit"),
    );
    let problems = problems(&flow);
    let problem = keyed(&problems, "routes[1].choice");
    assert!(
        problem.message.contains("has both `to` and `choice`"),
        "{}",
        problem.message
    );
}

#[test]
fn sub_millisecond_durations_are_refused_with_their_key() {
    let flow = FlowBuilder::new().channel(
        "orders",
        channel::point_to_point().time_to_live(Duration::from_micros(1_500)),
    );
    let problems = problems(&flow);
    let problem = keyed(&problems, r#"channels["orders"].time-to-live"#);
    assert!(problem.message.contains("1500us"), "{}", problem.message);
}

#[test]
fn a_datatype_needs_an_invalid_message_channel() {
    let flow = FlowBuilder::new().channel(
        "orders",
        channel::point_to_point().datatype("schemas/trade.json"),
    );
    let problems = problems(&flow);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].message.contains("invalid"),
        "{}",
        problems[0].message
    );
}

#[test]
fn a_bad_store_from_code_is_refused_with_its_keys() {
    let flow = FlowBuilder::new()
        .channel("orders", channel::point_to_point().durable())
        .store(store::embedded().path("").max_bytes(0));
    let problems = problems(&flow);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert_eq!(
        keyed(&problems, "store.max-bytes").message,
        "invalid `max-bytes`: `0` is not more than 0 bytes"
    );
    assert_eq!(keyed(&problems, "store.path").at, None);
}

#[test]
fn the_last_store_given_wins() {
    let flow = FlowBuilder::new()
        .store(store::embedded().path("first"))
        .store(store::embedded().max_bytes(1000));
    let store = flow.spec().store.clone().expect("a store");
    assert_eq!(store.path, None);
    assert_eq!(store.max_bytes.map(|m| m.value).as_deref(), Some("1 kB"));
}

#[test]
fn compile_reports_validation_problems_as_an_invalid_flow() {
    let flow = FlowBuilder::new().join(join::from("nowhere").to("nothing"));
    match flow.compile(".") {
        Err(BuildError::Invalid(errors)) => assert_eq!(errors.problems.len(), 2),
        Err(other) => panic!("expected validation problems, got {other}"),
        Ok(_) => panic!("a join between undeclared channels compiled"),
    }
}

#[test]
fn an_empty_flow_is_valid() {
    let plan = FlowBuilder::new().plan(".").expect("valid");
    assert_eq!(plan.channels.len(), 1, "only dead-letters");
    assert_eq!(FlowBuilder::new().spec(), &FlowSpec::default());
}

#[test]
fn empty_lists_are_refused_by_validation() {
    let flow = FlowBuilder::new()
        .channel("a", channel::point_to_point())
        .route(route::from("a").recipient_list(Vec::<String>::new()))
        .exchange("x", exchange::topic().bind("k.*", Vec::<String>::new()));
    let problems = problems(&flow);
    keyed(&problems, "routes[0].recipient-list");
    assert!(
        problems.iter().any(|p| p
            .key
            .as_deref()
            .is_some_and(|k| k.starts_with(r#"exchanges["x"]"#))),
        "{problems:#?}"
    );
}

/// Any text in any slot of the builder is validated into a plan or problems, never a panic,
/// and the problems render.
fn never_panics(name: &str, expression: &str, micros: u64) {
    let flow = FlowBuilder::new()
        .channel(
            name,
            channel::publish_subscribe().time_to_live(Duration::from_micros(micros)),
        )
        .channel(
            "q",
            channel::point_to_point()
                .datatype("no-such-schema.json")
                .invalid(name),
        )
        .route(
            route::from(name)
                .name(name)
                .filter(expression)
                .discard(name)
                .choice()
                .when(expression, name)
                .when(expression, "q")
                .otherwise(name),
        )
        .route(route::from("q").recipient_list_header(name))
        .join(join::from(name).to(name).filter(expression).hops(0))
        .exchange(
            name,
            exchange::topic()
                .alternate(name)
                .bind(expression, [name])
                .bind(name, ["q"]),
        );
    match flow.plan(".") {
        Ok(_) => {}
        Err(errors) => {
            let _ = errors.render();
            for problem in &errors.problems {
                if let (Some(at), Some(source)) = (problem.at, errors.source.as_deref()) {
                    assert!(
                        source.get(at.offset..at.offset + at.len).is_some(),
                        "{problem:?}"
                    );
                }
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_builder_input_never_panics(
        name in "\\PC{0,20}",
        expression in "(\\PC|\n|\r|\"|\\$|\\.|\\*|#|=){0,40}",
        micros in proptest::prelude::any::<u64>(),
    ) {
        never_panics(&name, &expression, micros);
    }
}
