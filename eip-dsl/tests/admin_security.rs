//! The admin server's security rules: with a token, every endpoint but liveness refuses a
//! request without it, with a malformed header or with another token (401, a JSON body saying
//! which); off loopback it does not start without a token; a bad address, an address in use,
//! a token variable that is not set, and the flow file's `admin:` problems are refused with
//! what was wrong.

mod support {
    pub mod admin;
}

use eip_dsl::admin::{AdminError, AdminOptions, AdminServer, ENDPOINTS};
use eip_dsl::compile::compile;
use serde_json::json;
use support::admin::{FLOW, answer, changes, plan, serve};

const TOKEN: &str = "s3cret-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_every_endpoint_but_liveness_refuses_without_it() {
    let served = serve(FLOW, Some(TOKEN)).await;
    let refusals = [
        (
            None,
            "this admin server needs a token: send `Authorization: Bearer TOKEN`",
        ),
        (
            Some("Basic czNjcmV0"),
            "the `Authorization` header is not `Bearer TOKEN`",
        ),
        (
            Some("Bearer s3cret-tokeN"),
            "the token is not the admin server's",
        ),
        (Some("Bearer s3cret"), "the token is not the admin server's"),
    ];
    for (_, path) in ENDPOINTS {
        let path = path.replace("{name}", "orders");
        for (header, error) in refusals {
            let mut request = served.client.get(format!("{}{path}", served.base));
            if let Some(header) = header {
                request = request.header("authorization", header);
            }
            let response = request.send().await.expect("an answer");
            let status = response.status().as_u16();
            let challenge = response.headers().get("www-authenticate").cloned();
            let body = response.text().await.expect("a body");
            if path == "/health/live" {
                assert_eq!(status, 200, "liveness needs no token: {body}");
                continue;
            }
            assert_eq!(status, 401, "{path} with {header:?}: {body}");
            assert!(challenge.is_some(), "{path}: a WWW-Authenticate header");
            let body: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            assert_eq!(body, json!({"error": error, "closest": null}), "{path}");
        }
    }
    let (status, body) = served.get("/api/channels").await;
    assert_eq!(status, 200, "with the token: {body}");
    let (status, _) = answer(
        served
            .client
            .get(format!("{}/api/flow", served.base))
            .header("authorization", format!("bearer {TOKEN}")),
    )
    .await;
    assert_eq!(status, 200, "the scheme in any case");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_loopback_is_open() {
    let served = serve(FLOW, None).await;
    assert!(!served.server.token_required());
    assert!(served.server.describe().ends_with("(loopback only)"));
    let (status, body) = served.get("/api/channels").await;
    assert_eq!(status, 200, "{body}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_loopback_the_server_does_not_start_without_a_token() {
    let plan = plan(FLOW);
    let flow = compile(&plan).expect("compiles");
    let options = AdminOptions {
        listen: "0.0.0.0:0".parse().expect("an address"),
        token: None,
    };
    let refused = AdminServer::start(options, flow.view(), &plan, changes(&flow).await).await;
    let Err(e @ AdminError::TokenRequired { .. }) = refused else {
        panic!("refused for want of a token: {refused:?}");
    };
    assert_eq!(
        e.to_string(),
        "the admin server would listen on 0.0.0.0:0, which is not a loopback address, without \
         a token: set the environment variable `EIP_ADMIN_TOKEN` to a bearer token, or listen \
         on 127.0.0.1"
    );
    let options = AdminOptions {
        listen: "0.0.0.0:0".parse().expect("an address"),
        token: Some(TOKEN.to_owned()),
    };
    let server = AdminServer::start(options, flow.view(), &plan, changes(&flow).await)
        .await
        .expect("starts with a token");
    assert!(server.describe().ends_with("(token required)"));
    server.shutdown(std::time::Duration::from_secs(1)).await;
}

#[test]
fn options_come_from_the_flag_the_flow_and_the_environment() {
    let no_env = |_: &str| None;
    let env = |name: &str| (name == "EIP_ADMIN_TOKEN").then(|| TOKEN.to_owned());
    assert_eq!(AdminOptions::resolve(None, None, env).expect("ok"), None);

    let opened = AdminOptions::resolve(Some("127.0.0.1:9191"), None, no_env).expect("ok");
    assert_eq!(
        opened.as_ref().map(|o| o.listen.to_string()).as_deref(),
        Some("127.0.0.1:9191")
    );
    assert_eq!(opened.and_then(|o| o.token), None);
    let opened = AdminOptions::resolve(Some("127.0.0.1:9191"), None, env).expect("ok");
    assert_eq!(opened.and_then(|o| o.token).as_deref(), Some(TOKEN));

    let refused = AdminOptions::resolve(Some("localhost:9090"), None, env).map(|_| ());
    assert_eq!(
        refused.map_err(|e| e.to_string()),
        Err("`localhost:9090` is not an IP address and port (such as `127.0.0.1:9090`)".to_owned())
    );
    let refused = AdminOptions::resolve(Some("0.0.0.0:9090"), None, no_env).map(|_| ());
    assert!(
        matches!(refused, Err(AdminError::TokenRequired { .. })),
        "{refused:?}"
    );

    // The flag wins over the file's address; the file's variable holds the token.
    let file = plan(&format!(
        "{FLOW}admin:\n  listen: 0.0.0.0:9292\n  token: ${{ORDERS_ADMIN_TOKEN}}\n"
    ));
    let admin = file.admin.as_ref();
    let file_env = |name: &str| (name == "ORDERS_ADMIN_TOKEN").then(|| "t".to_owned());
    let opened = AdminOptions::resolve(Some("127.0.0.1:9393"), admin, file_env).expect("ok");
    let opened = opened.expect("a server");
    assert_eq!(opened.listen.to_string(), "127.0.0.1:9393");
    assert_eq!(opened.token.as_deref(), Some("t"));
    let opened = AdminOptions::resolve(None, admin, file_env)
        .expect("ok")
        .expect("a server");
    assert_eq!(opened.listen.to_string(), "0.0.0.0:9292");
    let refused = AdminOptions::resolve(None, admin, env).map(|_| ());
    assert_eq!(
        refused.map_err(|e| e.to_string()),
        Err(
            "the admin token's environment variable `ORDERS_ADMIN_TOKEN` is not set (or empty)"
                .to_owned()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_in_use_is_refused_by_name() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().expect("its address");
    let plan = plan(FLOW);
    let flow = compile(&plan).expect("compiles");
    let options = AdminOptions {
        listen: addr,
        token: None,
    };
    let refused = AdminServer::start(options, flow.view(), &plan, changes(&flow).await).await;
    let Err(e) = refused else {
        panic!("refused: the address is in use");
    };
    assert_eq!(
        e.to_string(),
        format!("the admin server can not listen on {addr}: the address is in use")
    );
}

#[test]
fn the_flow_files_admin_section_is_checked_with_positions() {
    const ONE_CHANNEL: &str = "channels:\n  orders: {kind: point-to-point}\n";
    let problems = |admin: &str| {
        let text = format!("{ONE_CHANNEL}{admin}");
        let errors =
            eip_dsl::load::load_str(&text, "flow.yaml", ".".as_ref()).expect_err("problems");
        errors
            .problems
            .iter()
            .map(|p| (p.message.clone(), p.key.clone(), p.at.map(|at| at.line)))
            .collect::<Vec<_>>()
    };
    let line = ONE_CHANNEL.lines().count() as u32 + 2;
    assert_eq!(
        problems("admin:\n  listen: 0.0.0.0:9090\n"),
        vec![(
            "the admin server listens on `0.0.0.0:9090`, which is not a loopback address, \
             without a `token`"
                .to_owned(),
            Some("admin.listen".to_owned()),
            Some(line)
        )]
    );
    assert_eq!(
        problems("admin:\n  listen: nine\n"),
        vec![(
            "`listen` of `admin` is not an IP address and port: `nine`".to_owned(),
            Some("admin.listen".to_owned()),
            Some(line)
        )]
    );
    assert_eq!(
        problems("admin:\n  token: s3cret\n"),
        vec![(
            "`token` of `admin` must name an environment variable: `${NAME}`".to_owned(),
            Some("admin.token".to_owned()),
            Some(line)
        )]
    );
    let unknown = problems("admin:\n  port: 9090\n");
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert!(unknown[0].0.contains("port"), "{unknown:?}");
    let plan = plan(&format!("{ONE_CHANNEL}admin:\n"));
    let admin = plan.admin.expect("an admin section");
    assert_eq!(admin.listen.to_string(), "127.0.0.1:9090");
    assert_eq!(admin.token_env, None);
}
