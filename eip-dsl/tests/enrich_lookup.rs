//! The `enrich` step (the Content Enricher): an answer looked up over HTTP from a real server
//! started here, or by a query to the local PostgreSQL and MariaDB, merged into the payload;
//! its cache, its dry run, what `eip validate` refuses, the example and the builder.

mod support {
    pub mod customers;
    pub mod enrich_route;
    pub mod postgres;
    pub mod problems;
    pub mod validate;
}

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use eip_core::Message;
use eip_dsl::compile::{Flow, InputMessage};
use eip_dsl::step::Services;
use serde_json::{Value, json};
use support::customers::server;
use support::enrich_route::{death, drain, flow, flow_with, order, payload};
use support::postgres::TestDatabase;
use support::problems::{at, help, only, problems};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_answer_is_merged_into_the_payload_and_not_found_is_null() {
    let (base, seen) = server().await;
    let flow = flow(&format!(
        "      - enrich:
          http: {{url: '{base}/customers/{{$.customer_id}}'}}
          merge: '. + {{customer: $answer, by: $headers.customer}}'"
    ));
    let route = &flow.routes()[0];
    let msg = order("c1");
    let id = msg.id();
    route.handle(msg).await.unwrap();
    route.handle(order("nobody")).await.unwrap();
    let out = drain(&flow, "out").await;
    assert_eq!(out.len(), 2);
    assert_eq!(
        payload(&out[0]),
        json!({"order": 1, "customer_id": "c1", "customer": {"name": "Ada", "tier": "gold"}, "by": "c1"})
    );
    assert_eq!(out[0].id(), id, "the same message, enriched");
    assert_eq!(
        out[0].headers().get("customer").unwrap().as_str(),
        Some("c1")
    );
    assert_eq!(
        payload(&out[1])["customer"],
        Value::Null,
        "404: nothing found"
    );
    assert_eq!(seen.calls("/customers/nobody"), 1);
    assert!(drain(&flow, "dead-letters").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_merge_can_not_use_makes_the_message_invalid_at_once() {
    let (base, seen) = server().await;
    let flow = flow(&format!(
        "      - enrich:
          http: {{url: '{base}/customers/{{header.customer}}'}}
          merge: '. + {{tier: $answer.tier | ascii_upcase}}'
          retry: {{max-attempts: 3, backoff: 1ms}}"
    ));
    let route = &flow.routes()[0];
    for customer in ["bad", "text", "nobody"] {
        route.handle(order(customer)).await.unwrap();
    }
    // No header for the URL: the request can not be made.
    route.handle(Message::new("{}")).await.unwrap();
    route
        .handle(
            Message::builder("not json")
                .header("customer", "c1")
                .build(),
        )
        .await
        .unwrap();
    let dead = drain(&flow, "dead-letters").await;
    let deaths: Vec<(String, String)> = dead.iter().map(death).collect();
    assert_eq!(deaths.len(), 5, "{deaths:?}");
    assert!(
        deaths.iter().all(|(reason, _)| reason == "invalid"),
        "{deaths:?}"
    );
    assert!(
        deaths[0].1.contains("answered 400: not a customer id"),
        "{deaths:?}"
    );
    assert!(deaths[1].1.contains("is not JSON"), "{deaths:?}");
    assert!(
        deaths[2]
            .1
            .contains("merge `. + {tier: $answer.tier | ascii_upcase}`"),
        "{deaths:?}"
    );
    assert!(
        deaths[3].1.contains("no text header `customer`"),
        "{deaths:?}"
    );
    assert!(deaths[4].1.contains("is not valid JSON"), "{deaths:?}");
    assert_eq!(seen.calls("/customers/bad"), 1, "a 4xx is not retried");
    assert_eq!(
        dead[0].payload(),
        order("bad").payload(),
        "the message as it came"
    );
    assert!(drain(&flow, "out").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_is_taken_from_the_cache_within_its_ttl_and_asked_again_after() {
    let (base, seen) = server().await;
    let steps = |ttl: &str| {
        format!(
            "      - enrich:
          http: {{url: '{base}/customers/{{header.customer}}'}}
          merge: '. + {{name: $answer.name}}'
          cache: {{ttl: {ttl}, max-entries: 10}}"
        )
    };
    let long = flow(&steps("1h"));
    for customer in ["c1", "c1", "c2", "c1", "nobody", "nobody"] {
        long.routes()[0].handle(order(customer)).await.unwrap();
    }
    let names: Vec<Value> = drain(&long, "out")
        .await
        .iter()
        .map(|m| payload(m)["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!("Ada"),
            json!("Ada"),
            json!("Grace"),
            json!("Ada"),
            Value::Null,
            Value::Null
        ]
    );
    assert_eq!(seen.calls("/customers/c1"), 1, "the cache answered twice");
    assert_eq!(seen.calls("/customers/c2"), 1);
    assert_eq!(
        seen.calls("/customers/nobody"),
        1,
        "nothing found is kept too"
    );

    let short = flow(&steps("50ms"));
    short.routes()[0].handle(order("c2")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    short.routes()[0].handle(order("c2")).await.unwrap();
    assert_eq!(
        seen.calls("/customers/c2"),
        3,
        "asked again once the answer was too old"
    );
    assert_eq!(drain(&short, "out").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_lookup_sends_the_payload() {
    let (base, _seen) = server().await;
    let flow = flow(&format!(
        "      - enrich:
          http: {{url: '{base}/echo', method: post}}
          merge: '{{order: .order, echoed: $answer.sent.order}}'"
    ));
    flow.routes()[0].handle(order("c1")).await.unwrap();
    let out = drain(&flow, "out").await;
    assert_eq!(payload(&out[0]), json!({"order": 1, "echoed": 1}));
}

#[tokio::test]
async fn the_dry_run_looks_nothing_up() {
    let flow = flow(
        "      - enrich:
          http: {url: 'http://127.0.0.1:9/customers/{header.customer}'}
          merge: '. + {customer: $answer}'",
    );
    let input = InputMessage::parse(
        r#"{"to": "orders", "payload": {"a": 1}, "headers": {"customer": "c1"}}"#,
    )
    .unwrap();
    let report = flow.dry_run_steps(&input).unwrap();
    assert_eq!(report.stored, ["orders", "out"]);
    assert_eq!(
        report.steps[0].does,
        "enrich GET http://127.0.0.1:9/customers/{header.customer} | . + {customer: $answer}"
    );
    assert_eq!(report.steps[0].out[0].payload, json!({"a": 1}), "unchanged");
    // A message that can not make its request is invalid there too.
    let input = InputMessage::parse(r#"{"to": "orders", "payload": {"a": 1}}"#).unwrap();
    let report = flow.dry_run(&input).unwrap();
    let dead = report.dead_letter.expect("a dead letter");
    assert_eq!(
        (dead.channel.as_str(), dead.reason.as_str()),
        ("dead-letters", "invalid")
    );
}

/// A flow whose enricher merges the first row `query` finds in the database at `url`.
fn query_flow(url: &str, query: &str) -> Flow {
    flow_with(
        &format!(
            "      - enrich:
          sql: {{url: '{url}', query: '{query}'}}
          merge: '. + $answer'"
        ),
        "",
        &Services::new(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_s_first_row_or_all_rows_are_merged_with_named_parameters() {
    TestDatabase::create("eip_enrich").await.run(|_, url, pool| async move {
        sqlx::raw_sql(
            "create table customers (id text primary key, name text, tier text);
             insert into customers values ('c1', 'Ada', 'gold'), ('c2', 'Grace', 'gold'), ('c3', 'Alan', 'silver');",
        )
        .execute(&pool)
        .await
        .unwrap();
        let flow = flow(&format!(
            "      - enrich:
          sql:
            url: '{url}'
            query: 'select name, tier from customers where id = :id'
            params: {{id: '.customer_id'}}
          merge: '. + {{customer: $answer}}'
      - enrich:
          sql:
            url: '{url}'
            query: 'select name from customers where tier = :$.customer.tier order by name'
            rows: all
          merge: '. + {{peers: $answer | map(.name)}}'"
        ));
        let route = &flow.routes()[0];
        route.handle(order("c1")).await.unwrap();
        route.handle(order("c9")).await.unwrap();
        let out = drain(&flow, "out").await;
        assert_eq!(
            payload(&out[0]),
            json!({"order": 1, "customer_id": "c1", "customer": {"name": "Ada", "tier": "gold"}, "peers": ["Ada", "Grace"]})
        );
        // No row is null; then the second query finds no value for its parameter: invalid.
        assert!(out.len() == 1, "{out:?}");
        let dead = drain(&flow, "dead-letters").await;
        let (reason, error) = death(&dead[0]);
        assert_eq!(reason, "invalid");
        assert!(error.contains("parameter `:$.customer.tier` found no value"), "{error}");

        // A query the database refuses fails the route (redelivery), naming the statement.
        let broken = query_flow(&url, "select name from nowhere where id = :customer_id");
        let failed = broken.routes()[0].handle(order("c1")).await.unwrap_err().to_string();
        assert!(failed.contains("statement `select name from nowhere"), "{failed}");
        assert!(failed.contains("nowhere"), "{failed}");

        // A column read as no JSON type: the same on every attempt, so invalid at once.
        let dated = query_flow(&url, "select now() as at where :customer_id is not null");
        dated.routes()[0].handle(order("c1")).await.unwrap();
        let dead = drain(&dated, "dead-letters").await;
        let (reason, error) = death(&dead[0]);
        assert_eq!(reason, "invalid");
        assert!(error.contains("column `at` has type TIMESTAMPTZ"), "{error}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_query_is_merged_the_same_way() {
    let url = std::env::var("EIP_TEST_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
    let pool = sqlx::MySqlPool::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("MariaDB at {url} is needed: {e}"));
    let table = format!("enrich_customers_{}", std::process::id());
    sqlx::raw_sql(&format!(
        "drop table if exists {table}; create table {table} (id varchar(8) primary key, name text, orders int);
         insert into {table} values ('c1', 'Ada', 3), ('c2', 'Grace', 5);"
    ))
    .execute(&pool)
    .await
    .unwrap();
    let flow = flow(&format!(
        "      - enrich:
          sql:
            url: '{url}'
            query: 'select name, orders from {table} where id = :id or orders > :min order by id'
            params: {{id: '.customer_id', min: '4'}}
            rows: all
          merge: '. + {{found: $answer}}'"
    ));
    flow.routes()[0].handle(order("c1")).await.unwrap();
    let _ = sqlx::raw_sql(&format!("drop table {table}"))
        .execute(&pool)
        .await;
    let out = drain(&flow, "out").await;
    assert_eq!(
        payload(&out[0])["found"],
        json!([{"name": "Ada", "orders": 3}, {"name": "Grace", "orders": 5}])
    );
}

fn enrich_flow(lines: &[&str]) -> Vec<String> {
    let mut flow = vec![
        "channels:",
        "  orders: {kind: point-to-point}",
        "  out: {kind: point-to-point}",
        "routes:",
        "  - from: orders",
        "    to: out",
        "    steps:",
        "      - enrich:",
    ];
    flow.extend_from_slice(lines);
    flow.into_iter().map(str::to_owned).collect()
}

/// Each problem of a flow: its message and position.
fn refused(lines: &[&str]) -> Vec<(String, (u32, u32))> {
    let flow = enrich_flow(lines);
    let lines: Vec<&str> = flow.iter().map(String::as_str).collect();
    problems(&lines)
        .iter()
        .map(|p| (p.message.clone(), at(p)))
        .collect()
}

/// The one problem of a flow: its message, position and help.
fn refused_once(lines: &[&str]) -> (String, (u32, u32), String) {
    let flow = enrich_flow(lines);
    let lines: Vec<&str> = flow.iter().map(String::as_str).collect();
    let problem = only(&lines);
    (
        problem.message.clone(),
        at(&problem),
        help(&problem).to_owned(),
    )
}

#[test]
fn bad_settings_are_refused_with_their_positions() {
    let got = refused(&[
        "          http: {url: 'http://h/{nope}'}",
        "          merge: '. + {a: $answr}'",
        "          timeout: 0s",
        "          circuit-breaker: {failures: 0}",
        "          cache: {max-entries: 10}",
        "          retry: {max-attempts: 0, backof: 1s}",
    ]);
    let text = format!("{got:#?}");
    let has = |message: &str, at: (u32, u32)| {
        assert!(
            got.iter().any(|(m, a)| m.contains(message) && *a == at),
            "no `{message}` at {at:?}: {text}"
        );
    };
    has("invalid `url`: unknown placeholder `{nope}`", (9, 34));
    has(
        "invalid jq: invalid jq expression at byte 8: undefined variable `$answr`",
        (10, 27),
    );
    has("`timeout` must be longer than zero", (11, 20));
    has("`failures` must be a whole number of at least 1", (12, 39));
    has("has no `ttl`", (13, 18));
    has("unknown key `backof`", (14, 36));

    let (message, at, help) = refused_once(&[
        "          http: {url: 'http://h/x', methd: get}",
        "          merge: '$answer'",
    ]);
    assert!(
        message.starts_with("unknown key `methd` in `http`"),
        "{message}"
    );
    assert_eq!(at, (9, 37));
    assert_eq!(help, "did you mean `method`?");
    let (message, at, _) = refused_once(&[
        "          sql: {url: 'postgres://h/db', query: 'select a from t where id = :id and x = $1', params: {id: '.a'}}",
        "          merge: '$answer'",
    ]);
    assert!(message.contains("invalid `query`"), "{message}");
    assert_eq!(at, (9, 88), "the `$1`");
    let (message, _, help) = refused_once(&[
        "          sql: {url: 'postgres://h/db', query: 'select a from t where id = :key', params: {id: '.a'}}",
        "          merge: '$answer'",
    ]);
    assert!(
        message.contains("the parameter `:key`, which `params` does not compute"),
        "{message}"
    );
    assert!(help.contains("add it to `params:`"), "{help}");
    let got = refused(&[
        "          http: {url: 'http://h/x'}",
        "          sql: {url: 'postgres://h/db', query: 'select 1'}",
        "          merge: '$answer'",
    ]);
    assert!(
        got[0].0.contains("`http` and `sql` contradict each other"),
        "{got:?}"
    );
    let got = refused(&["          merge: '$answer'"]);
    assert!(got[0].0.contains("has no `http`"), "{got:?}");
}

/// `eip run` on `examples/flows/enrich-customers.yaml` with its input: what reached each
/// channel, and the dead letters' reasons.
#[test]
fn the_enrich_example_routes_each_order_by_its_customer_s_tier() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flows");
    let data = std::env::temp_dir().join(format!("eip-enrich-example-{}", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_eip"))
        .arg("run")
        .arg(dir.join("enrich-customers.yaml"))
        .arg("--input")
        .arg(dir.join("enrich-customers.input.jsonl"))
        .args(["--stats-interval", "0", "--data-dir"])
        .arg(&data)
        .output()
        .expect("the eip binary runs");
    let _ = std::fs::remove_dir_all(&data);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let mut delivered: HashMap<String, Vec<Value>> = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        let channel = record["channel"].as_str().unwrap().to_owned();
        delivered
            .entry(channel)
            .or_default()
            .push(record["payload"].clone());
    }
    let orders = |channel: &str| -> Vec<Value> {
        let mut orders: Vec<Value> = delivered
            .get(channel)
            .map(|p| p.iter().map(|o| o["order"].clone()).collect())
            .unwrap_or_default();
        orders.sort_by_key(|o| o.as_i64());
        orders
    };
    assert_eq!(orders("orders.gold"), [json!(1), json!(4)], "{delivered:?}");
    assert_eq!(orders("orders.standard"), [json!(2)], "{delivered:?}");
    assert_eq!(
        orders("orders.unknown-customer"),
        [json!(3)],
        "{delivered:?}"
    );
    let gold = &delivered["orders.gold"];
    assert!(gold.iter().all(|o| o["customer_name"] == "Ada"), "{gold:?}");
    assert_eq!(delivered["dead-letters"].len(), 1, "{delivered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builder_makes_the_enrich_step_a_flow_file_makes() {
    use eip_dsl::builder::adapter::Value as Setting;
    use eip_dsl::builder::{FlowBuilder, channel, route, step};

    let (base, seen) = server().await;
    let url = format!("{base}/customers/{{header.customer}}");
    let enrich = step::kind("enrich")
        .set("http", Setting::map([("url", url.as_str())]))
        .set("merge", ". + {customer: $answer.name}")
        .set("timeout", Duration::from_secs(2))
        .set("cache", Setting::map([("ttl", "1h")]));
    let flow = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .channel("out", channel::point_to_point())
        .route(route::from("orders").step(enrich).to("out"))
        .compile(".")
        .unwrap();
    let route = &flow.routes()[0];
    route.handle(order("c2")).await.unwrap();
    route.handle(order("c2")).await.unwrap();
    let out = drain(&flow, "out").await;
    assert_eq!(payload(&out[1])["customer"], "Grace");
    assert_eq!(seen.calls("/customers/c2"), 1, "the second from the cache");
    let same = flow_with(
        &format!(
            "      - enrich:
          http: {{url: '{url}'}}
          merge: '. + {{customer: $answer.name}}'
          timeout: 2s
          cache: {{ttl: 1h}}"
        ),
        "",
        &Services::new(),
    );
    let input =
        InputMessage::parse(r#"{"to": "orders", "payload": {}, "headers": {"customer": "c2"}}"#)
            .unwrap();
    assert_eq!(
        flow.dry_run_steps(&input).unwrap().steps[0].does,
        same.dry_run_steps(&input).unwrap().steps[0].does
    );
}
