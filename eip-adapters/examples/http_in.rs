//! HTTP in → channel → printed: the inbound HTTP channel adapter feeding a point-to-point
//! channel, and a consumer printing what arrives.
//!
//! ```text
//! cargo run -p eip-adapters --example http_in              # serves until stopped (Ctrl-C)
//! curl -i -H 'content-type: application/json' -H 'x-customer: acme' \
//!      -d '{"sku": "widget", "qty": 2}' http://127.0.0.1:8080/orders
//!
//! cargo run -p eip-adapters --example http_in -- --demo    # posts three orders itself, then stops
//! ```

#[cfg(feature = "http")]
mod example {
    use std::convert::Infallible;
    use std::time::Duration;

    use eip_adapters::http::{HttpInbound, HttpInboundConfig};
    use eip_core::Message;
    use eip_core::channel::PointToPoint;
    use eip_core::endpoint::Consumer;
    use tower::service_fn;

    #[tokio::main]
    pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
        let demo = std::env::args().any(|a| a == "--demo");
        let orders = PointToPoint::new("orders", 100)?;

        let address = if demo {
            "127.0.0.1:0"
        } else {
            "127.0.0.1:8080"
        };
        let mut config = HttpInboundConfig::new(address.parse()?, "/orders");
        config.copy_headers = vec!["x-customer".into()];
        let server = HttpInbound::new(config, orders.clone())?.bind().await?;
        println!("POST to http://{}/orders", server.local_addr());

        let printer = Consumer::new(
            orders.receiver(),
            service_fn(|msg: Message| async move {
                let customer = msg.headers().get("x-customer").map(ToString::to_string);
                println!(
                    "{} from {}: {}",
                    msg.id(),
                    customer.as_deref().unwrap_or("anyone"),
                    msg.payload_str().unwrap_or("<binary>")
                );
                Ok::<_, Infallible>(())
            }),
        )
        .spawn();

        if demo {
            let client = reqwest::Client::builder().no_proxy().build()?;
            for (customer, sku) in [("acme", "widget"), ("globex", "gadget"), ("acme", "gizmo")] {
                let answer = client
                    .post(format!("http://{}/orders", server.local_addr()))
                    .header("content-type", "application/json")
                    .header("x-customer", customer)
                    .body(format!(r#"{{"sku": "{sku}", "qty": 1}}"#))
                    .send()
                    .await?;
                println!("answered {}: {}", answer.status(), answer.text().await?);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        } else {
            std::future::pending::<()>().await;
        }
        server.shutdown().await;
        printer.shutdown().await;
        Ok(())
    }
}

#[cfg(feature = "http")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    example::main()
}

#[cfg(not(feature = "http"))]
fn main() {
    eprintln!("this example needs the `http` feature");
}
