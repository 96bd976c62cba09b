//! The OpenAPI document served at `/api/openapi.json` is the API: every endpoint the router
//! serves is in it and nothing else, each object schema requires every property it lists
//! and allows no other, and what each endpoint of a running flow really answers (its 200s,
//! its 404s, its 401s) validates against the schema the document gives for that status.

mod support {
    pub mod admin;
}

use std::collections::BTreeSet;

use eip_core::Message;
use eip_core::channel::{Datatype, JsonSchema};
use eip_dsl::admin::{ENDPOINTS, OPENAPI};
use serde_json::{Value, json};
use support::admin::{FLOW, Served, eventually, serve};

fn document() -> Value {
    serde_json::from_str(OPENAPI).expect("the document is JSON")
}

#[test]
fn the_document_lists_every_endpoint_and_no_other() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(path, item)| {
            let methods = item.as_object().expect("a path item");
            methods.keys().map(move |m| (m.clone(), path.clone()))
        })
        .collect();
    let served: BTreeSet<(String, String)> = ENDPOINTS
        .iter()
        .map(|(method, path)| (method.to_string(), path.to_string()))
        .collect();
    assert_eq!(documented, served);
}

#[test]
fn every_object_schema_requires_exactly_its_properties() {
    let doc = document();
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        let properties: BTreeSet<&str> = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name} has properties"))
            .keys()
            .map(String::as_str)
            .collect();
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} has required"))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(properties, required, "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
    }
}

/// The schema the document gives for `method path` answering `status`, with the document's
/// components beside it so its references resolve.
fn response_schema(doc: &Value, path: &str, status: u16) -> Option<Value> {
    let response = &doc["paths"][path]["get"]["responses"][status.to_string()];
    let schema = response["content"]["application/json"]["schema"].clone();
    if schema.is_null() {
        return None;
    }
    Some(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [schema],
        "components": doc["components"],
    }))
}

/// Checks the answer of `path` (the document's `template`) against the document.
async fn check(served: &Served, doc: &Value, template: &str, path: &str, token: Option<&str>) {
    let mut request = served.client.get(format!("{}{path}", served.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("an answer");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|k| k.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.text().await.expect("a body");
    let documented = &doc["paths"][template]["get"]["responses"][status.to_string()];
    assert!(
        documented.is_object(),
        "{path} answered {status}, which the document does not list: {body}"
    );
    let Some(schema) = response_schema(doc, template, status) else {
        let media = documented["content"]
            .as_object()
            .and_then(|c| c.keys().next().cloned());
        assert!(
            kind.starts_with(media.as_deref().unwrap_or("?")),
            "{path}: {kind}"
        );
        return;
    };
    assert!(kind.starts_with("application/json"), "{path}: {kind}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    // The Datatype Channel's own JSON Schema validator, on the answer as a message.
    let schema = JsonSchema::new(path, &schema).expect("the schema compiles");
    if let Err(reason) = schema.check(&Message::new(body.clone())) {
        panic!("{path} ({status}) does not match the document: {reason}\n{answer:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_matches_the_document() {
    let doc = document();
    let served = serve(FLOW, Some("t0ken")).await;
    // Counters, a last error and rates to show.
    served.send("orders", json!({"total": 500})).await;
    served.send("small", json!({"say": "fail"})).await;
    eventually("the failure counted", || async {
        served.json("/api/routes/check").await.1["counters"]["failed"] == 1
    })
    .await;
    let names = [
        ("/api/channels/{name}", "orders"),
        ("/api/routes/{name}", "check"),
        ("/api/exchanges/{name}", "market"),
    ];
    // The endpoints that change the flow are held to the document by admin_changes.rs.
    for (_, template) in ENDPOINTS.iter().filter(|(method, _)| *method == "get") {
        let path = names.iter().find(|(t, _)| t == template).map_or_else(
            || template.to_string(),
            |(t, name)| t.replace("{name}", name),
        );
        check(&served, &doc, template, &path, Some("t0ken")).await;
        if *template != "/health/live" {
            check(&served, &doc, template, &path, None).await;
        }
        if template.contains("{name}") {
            check(
                &served,
                &doc,
                template,
                &template.replace("{name}", "nope"),
                Some("t0ken"),
            )
            .await;
        }
    }
    let (_, served_doc) = served.json("/api/openapi.json").await;
    assert_eq!(served_doc, doc, "the served document is the crate's");
    served.stop().await;
}
