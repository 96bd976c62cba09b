//! `adapters:` in flow files: every kind read into its configuration, and every kind of
//! mistake reported at its position with help.

use std::net::SocketAddr;
use std::time::Duration;

use eip_adapters::file::{FileSinkConfig, FileSourceConfig, ReadMode, SinkMode, WhenDone};
use eip_adapters::http::{HttpInboundConfig, HttpOutboundConfig, OutboundMethod};
use eip_adapters::sql::Claim;
use eip_dsl::kind::sql::{SqlIn, SqlOut};

mod support {
    pub mod problems;
    pub mod validate;
}

use support::problems::{at, help, only, problems};
use support::validate::{fixtures, load};

const CHANNELS: &[&str] = &[
    "channels:",
    "  orders: {kind: point-to-point}",
    "  shipped: {kind: publish-subscribe}",
];

/// The channels above, then `adapters:` and `lines`: line N of `lines` is line N + 4.
fn with_adapters(lines: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = CHANNELS.iter().map(|l| (*l).to_owned()).collect();
    all.push("adapters:".to_owned());
    all.extend(lines.iter().map(|l| (*l).to_owned()));
    all
}

fn lines(all: &[String]) -> Vec<&str> {
    all.iter().map(String::as_str).collect()
}

#[test]
fn every_kind_is_read_into_its_configuration() {
    let all = with_adapters(&[
        "  incoming:",
        "    {kind: file-in, to: orders, dir: in, glob: '*.json', mode: json-lines,",
        "     delete-when-done: true, max-size: 1 MiB, poll-interval: 250ms, watch: false}",
        "  archive: {kind: file-out, from: shipped, dir: out, append: 'day-{yyyy}{MM}{dd}.jsonl'}",
        "  api:",
        "    kind: http-in",
        "    to: orders",
        "    listen: 127.0.0.1:0",
        "    path: /orders",
        "    json: true",
        "    body-limit: 64 KiB",
        "    bearer-token-env: ORDERS_TOKEN",
        "    headers: [X-Customer]",
        "    request-timeout: 5s",
        "  notify:",
        "    kind: http-out",
        "    from: shipped",
        "    url: 'http://127.0.0.1:9000/shipments/{id}'",
        "    method: put",
        "    concurrency: 8",
        "    rate-limit: {requests: 100, per: 1s}",
        "    timeout: 2s",
        "    redelivery: {max-attempts: 3}",
        "  poll:",
        "    kind: sql-in",
        "    to: orders",
        "    url: sqlite:orders.db",
        "    query: SELECT id, sku FROM orders WHERE NOT done",
        "    done: UPDATE orders SET done = 1 WHERE id = :id",
        "    claim: {table: orders, key: id, timeout: 1m}",
        "    max-rows: 10",
        "  store:",
        "    kind: sql-out",
        "    from: orders",
        "    url: postgres://${PGUSER:-root}@127.0.0.1/test",
        "    password-env: PGPASSWORD",
        "    statement: INSERT INTO orders (sku) VALUES (:$.sku)",
        "    setup: CREATE TABLE IF NOT EXISTS orders (sku TEXT)",
        "    batch-size: 50",
    ]);
    let plan = load(&lines(&all)).unwrap_or_else(|e| panic!("{}", e.render()));
    let kinds: Vec<(&str, &str, &str)> = plan
        .adapters
        .iter()
        .map(|a| (a.name.as_str(), a.kind().as_str(), a.channel.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("incoming", "file-in", "orders"),
            ("archive", "file-out", "shipped"),
            ("api", "http-in", "orders"),
            ("notify", "http-out", "shipped"),
            ("poll", "sql-in", "orders"),
            ("store", "sql-out", "orders"),
        ]
    );
    let Some(file_in) = plan.adapters[0].config_as::<FileSourceConfig>() else {
        panic!("file-in")
    };
    assert_eq!(
        file_in.dir(),
        fixtures().join("in"),
        "relative to the flow file"
    );
    assert!(file_in.glob().matches("a.json") && !file_in.glob().matches("a.txt"));
    assert_eq!(file_in.mode(), ReadMode::JsonLines);
    assert_eq!(file_in.when_done(), &WhenDone::Delete);
    assert_eq!(file_in.max_size(), 1 << 20);
    let Some(file_out) = plan.adapters[1].config_as::<FileSinkConfig>() else {
        panic!("file-out")
    };
    assert_eq!(file_out.dir(), fixtures().join("out"));
    let Some(http_in) = plan.adapters[2].config_as::<HttpInboundConfig>() else {
        panic!("http-in")
    };
    assert_eq!(
        http_in.address,
        "127.0.0.1:0".parse::<SocketAddr>().unwrap()
    );
    assert_eq!(http_in.path, "/orders");
    assert!(http_in.json);
    assert_eq!(http_in.body_limit, 64 * 1024);
    assert_eq!(http_in.bearer_token_env.as_deref(), Some("ORDERS_TOKEN"));
    assert_eq!(http_in.copy_headers, ["x-customer"]);
    assert_eq!(http_in.request_timeout, Duration::from_secs(5));
    let Some(http_out) = plan.adapters[3].config_as::<HttpOutboundConfig>() else {
        panic!("http-out")
    };
    assert_eq!(http_out.method, OutboundMethod::Put);
    let layers = &plan.adapters[3].outbound;
    assert_eq!(layers.concurrency, Some(8));
    assert_eq!(layers.rate_limit, Some((100, Duration::from_secs(1))));
    assert_eq!(layers.timeout, Some(Duration::from_secs(2)));
    assert_eq!(layers.redelivery.as_ref().map(|r| r.max_attempts), Some(3));
    let Some(SqlIn { config: sql_in, .. }) = plan.adapters[4].config_as::<SqlIn>() else {
        panic!("sql-in")
    };
    assert_eq!(sql_in.max_rows, 10);
    let Claim::Column(claim) = &sql_in.claim else {
        panic!("a claim column")
    };
    assert_eq!((claim.table.as_str(), claim.key.as_str()), ("orders", "id"));
    assert_eq!(claim.timeout, Duration::from_secs(60));
    let Some(SqlOut {
        config: sql_out,
        setup,
    }) = plan.adapters[5].config_as::<SqlOut>()
    else {
        panic!("sql-out")
    };
    assert_eq!(sql_out.batch_size, 50);
    assert_eq!(*setup, ["CREATE TABLE IF NOT EXISTS orders (sku TEXT)"]);
    assert_eq!(
        sql_out.connection.password_env.as_deref(),
        Some("PGPASSWORD")
    );
    assert_eq!(
        plan.adapters[5].endpoint(),
        "postgres://${PGUSER:-root}@127.0.0.1/test"
    );
}

#[test]
fn an_unknown_key_gets_the_closest_key_of_that_kind() {
    let all = with_adapters(&["  incoming: {kind: file-in, to: orders, dir: in, glb: '*.json'}"]);
    let p = only(&lines(&all));
    assert_eq!(p.message, "unknown key `glb` in adapter `incoming`");
    assert_eq!(help(&p), "did you mean `glob`?");
    assert_eq!(p.key.as_deref(), Some("adapters[\"incoming\"].glb"));
    assert_eq!(at(&p), (5, 50));
}

#[test]
fn a_key_of_another_kind_is_unknown() {
    let all = with_adapters(&["  out: {kind: file-out, from: orders, dir: out, glob: '*'}"]);
    let p = only(&lines(&all));
    assert_eq!(p.message, "unknown key `glob` in adapter `out`");
}

#[test]
fn an_unknown_kind_gets_the_closest_kind() {
    let all = with_adapters(&["  incoming: {kind: file-inn, to: orders, dir: in}"]);
    let p = only(&lines(&all));
    assert_eq!(p.message, "`kind` can not be `file-inn`");
    assert_eq!(help(&p), "did you mean `file-in`?");
    assert_eq!(at(&p), (5, 20));
}

#[test]
fn the_channel_must_be_declared_and_is_named_by_to_or_from() {
    let all = with_adapters(&[
        "  a: {kind: file-in, to: order, dir: in}",
        "  b: {kind: file-out, to: orders, dir: out}",
    ]);
    let ps = problems(&lines(&all));
    let found: Vec<(&str, (u32, u32), &str)> = ps
        .iter()
        .map(|p| (p.message.as_str(), at(p), help(p)))
        .collect();
    assert_eq!(
        found,
        [
            ("unknown channel `order`", (5, 26), "did you mean `orders`?"),
            (
                "unknown key `to` in adapter `b`",
                (6, 23),
                "an outbound adapter consumes a channel: write `from: CHANNEL`"
            ),
        ]
    );
}

#[test]
fn values_that_do_not_parse_are_reported_where_they_are_written() {
    let all = with_adapters(&[
        "  a: {kind: http-in, to: orders, listen: 'localhost:80', path: orders}",
        "  b: {kind: http-out, from: orders, url: 'ftp://example.org/x'}",
        "  c: {kind: file-in, to: orders, dir: in, glob: '[a', poll-interval: 5}",
        "  d: {kind: sql-out, from: orders, url: 'oracle://db/x', statement: 'SELECT 1'}",
        "  e: {kind: file-out, from: orders, dir: out, concurrency: 0, timeout: fast}",
        "  f: {kind: http-in, to: orders, listen: '127.0.0.1:1', path: /x, bearer-token-env: 'abc def'}",
    ]);
    let ps = problems(&lines(&all));
    let found: Vec<(String, (u32, u32))> = ps
        .iter()
        .map(|p| (p.key.clone().unwrap_or_default(), at(p)))
        .collect();
    assert_eq!(
        found,
        [
            (r#"adapters["a"].listen"#.to_owned(), (5, 43)),
            (r#"adapters["a"].path"#.to_owned(), (5, 64)),
            (r#"adapters["b"].url"#.to_owned(), (6, 43)),
            (r#"adapters["c"].glob"#.to_owned(), (7, 50)),
            (r#"adapters["c"].poll-interval"#.to_owned(), (7, 70)),
            (r#"adapters["d"].url"#.to_owned(), (8, 42)),
            (r#"adapters["e"].concurrency"#.to_owned(), (9, 60)),
            (r#"adapters["e"].timeout"#.to_owned(), (9, 72)),
            (r#"adapters["f"].bearer-token-env"#.to_owned(), (10, 86)),
        ],
        "{ps:#?}"
    );
    assert_eq!(ps[0].message, "`localhost:80` is not an address and port");
    assert_eq!(ps[1].message, "`path` must start with `/`, found `orders`");
    assert!(
        ps[2].message.starts_with("invalid `url`: "),
        "{}",
        ps[2].message
    );
    assert_eq!(help(&ps[4]), "`5` has no unit (`5s`?)");
    assert!(
        ps[5].message.starts_with("unknown database"),
        "{}",
        ps[5].message
    );
    assert_eq!(
        ps[8].message,
        "`abc def` is not an environment variable name"
    );
}

#[test]
fn a_missing_required_key_is_reported_at_the_entry() {
    let all = with_adapters(&[
        "  poll: {kind: sql-in, to: orders, url: 'sqlite:x.db', done: 'DELETE FROM t WHERE id = :id'}",
    ]);
    let p = only(&lines(&all));
    assert_eq!(p.message, "`sql-in` adapter `poll` has no `query`");
    assert_eq!(at(&p), (5, 3));
}

#[test]
fn contradicting_keys_are_refused() {
    let all = with_adapters(&[
        "  a: {kind: file-out, from: orders, dir: out, name: '{id}', append: 'all.jsonl'}",
        "  b: {kind: file-in, to: orders, dir: in, done-dir: done, delete-when-done: true}",
    ]);
    let ps = problems(&lines(&all));
    assert_eq!(ps.len(), 2, "{ps:#?}");
    assert_eq!(ps[0].message, "`name` and `append` contradict each other");
    assert_eq!(
        ps[1].message,
        "`done-dir` and `delete-when-done: true` contradict each other"
    );
}

#[test]
fn file_out_writes_envelopes_only_as_json_lines() {
    let all = with_adapters(&[
        "  a: {kind: file-out, from: orders, dir: out, append: 'dead.jsonl', envelope: true}",
        "  b: {kind: file-out, from: orders, dir: out, name: '{id}', envelope: true}",
    ]);
    let ps = problems(&lines(&all));
    assert_eq!(ps.len(), 1, "{ps:#?}");
    assert_eq!(
        ps[0].message,
        "`file-out` adapter `b`: `envelope` needs `append`: envelopes are written as JSON lines"
    );
    let plan = load(&lines(&with_adapters(&[
        "  a: {kind: file-out, from: orders, dir: out, append: 'dead.jsonl', envelope: true}",
    ])));
    let plan = plan.unwrap();
    let Some(sink) = plan.adapters[0].config_as::<FileSinkConfig>() else {
        panic!("file-out")
    };
    assert!(
        matches!(sink.mode(), SinkMode::AppendEnvelopes(_)),
        "{:?}",
        sink.mode()
    );
}

#[test]
fn an_adapter_may_not_take_the_name_of_a_channel() {
    let all = with_adapters(&["  orders: {kind: file-in, to: orders, dir: in}"]);
    let p = only(&lines(&all));
    assert_eq!(
        p.message,
        "adapter `orders` has the name of a channel or exchange"
    );
}

#[test]
fn nested_mappings_are_checked_key_by_key() {
    let all = with_adapters(&[
        "  a: {kind: sql-in, to: orders, url: 'sqlite:x.db', query: 'SELECT id FROM t',",
        "      done: 'DELETE FROM t WHERE id = :id', claim: {table: t, kee: id}}",
        "  b: {kind: http-out, from: orders, url: 'http://h/x', rate-limit: {requests: 5}}",
    ]);
    let ps = problems(&lines(&all));
    let found: Vec<(&str, &str)> = ps.iter().map(|p| (p.message.as_str(), help(p))).collect();
    assert_eq!(
        found,
        [
            (
                "unknown key `kee` in `claim` of `sql-in` adapter `a`",
                "did you mean `key`?"
            ),
            (
                "`rate-limit` of `http-out` adapter `b` has no `per`",
                "add `per: 1s`"
            ),
        ]
    );
}

#[test]
fn a_routing_key_with_an_unknown_or_unclosed_placeholder_is_refused() {
    for (key, why) in [
        ("'{header.x'", "never closed"),
        ("'orders.{header.region'", "never closed"),
        ("'orders.{region}'", "unknown placeholder `{region}`"),
    ] {
        let all: Vec<String> = CHANNELS
            .iter()
            .map(|l| (*l).to_owned())
            .chain([
                "bridges:".to_owned(),
                format!(
                    "  out: {{kind: rabbitmq-out, from: orders, url: 'amqp://127.0.0.1', exchange: x, routing-key: {key}}}"
                ),
            ])
            .collect();
        let p = only(&lines(&all));
        assert_eq!(
            p.key.as_deref(),
            Some(r#"bridges["out"].routing-key"#),
            "{key}"
        );
        assert!(
            p.message.starts_with("invalid `routing-key`: ") && p.message.contains(why),
            "{key}: {}",
            p.message
        );
    }
}
