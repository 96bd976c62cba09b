//! A database table polled into a channel, and each row printed.
//!
//! Writes ten orders into a table of the local PostgreSQL with [`SqlOutbound`], then polls them
//! with [`SqlInbound`] into a channel whose consumer prints each one; each row is marked done
//! once the channel accepted it. Drops the table at the end.
//!
//! ```text
//! cargo run -p eip-adapters --example sql_poll
//! ```
//!
//! The server is `PGHOST`, `PGPORT`, `PGUSER` and `PGDATABASE` (defaults 127.0.0.1, 5432, root,
//! test), with trust authentication or the password in `PGPASSWORD`.

#[cfg(feature = "sql")]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use eip_adapters::sql::{
        Connection, SqlInbound, SqlInboundConfig, SqlOutbound, SqlOutboundConfig,
    };
    use eip_core::Message;
    use eip_core::channel::PointToPoint;
    use eip_core::endpoint::Consumer;
    use tower::{Service, ServiceExt};

    let mut connection = Connection::new(
        "postgres://${PGUSER:-root}@${PGHOST:-127.0.0.1}:${PGPORT:-5432}/${PGDATABASE:-test}",
    );
    if std::env::var_os("PGPASSWORD").is_some() {
        connection = connection.password_env("PGPASSWORD");
    }

    // The table, made with a statement of the outbound adapter that binds nothing.
    let ddl = |sql: &str| SqlOutboundConfig::new(connection.clone(), sql);
    for sql in [
        "DROP TABLE IF EXISTS eip_example_orders",
        "CREATE TABLE eip_example_orders (id SERIAL PRIMARY KEY, item TEXT NOT NULL, \
         qty INTEGER NOT NULL, done BOOLEAN NOT NULL DEFAULT false)",
    ] {
        SqlOutbound::connect(ddl(sql))
            .await?
            .write_batch(&[Message::new("{}")])
            .await?;
    }

    // Ten orders written by the outbound adapter, values bound from each message's JSON.
    let mut insert = SqlOutbound::connect(SqlOutboundConfig::new(
        connection.clone(),
        "INSERT INTO eip_example_orders (item, qty) VALUES (:$.item, :$.qty)",
    ))
    .await?;
    for i in 1..=10 {
        let order =
            Message::json_payload(&serde_json::json!({"item": format!("widget {i}"), "qty": i}))?;
        insert.ready().await?.call(order).await?;
    }

    // The channel, and a consumer printing what arrives.
    let orders = PointToPoint::builder("orders").capacity(4).build()?;
    let printed = Arc::new(AtomicUsize::new(0));
    let count = printed.clone();
    let printer = Consumer::new(
        orders.receiver(),
        tower::service_fn(move |msg: Message| {
            let count = count.clone();
            async move {
                println!("{}", msg.payload_str().unwrap_or("<not UTF-8>"));
                count.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::convert::Infallible>(())
            }
        }),
    )
    .spawn();

    // The inbound adapter: rows not done, claimed with FOR UPDATE SKIP LOCKED, marked done
    // once the channel has them.
    let poller = SqlInbound::connect(
        SqlInboundConfig::new(
            connection.clone(),
            "SELECT id, item, qty FROM eip_example_orders WHERE NOT done ORDER BY id",
            "UPDATE eip_example_orders SET done = true WHERE id = :id",
        )
        .interval(Duration::from_millis(200)),
    )
    .await?
    .spawn(orders.sender());

    while printed.load(Ordering::SeqCst) < 10 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    poller.shutdown().await;
    printer.shutdown().await;

    SqlOutbound::connect(ddl("DROP TABLE eip_example_orders"))
        .await?
        .write_batch(&[Message::new("{}")])
        .await?;
    println!("10 rows polled, printed and marked done");
    Ok(())
}

#[cfg(not(feature = "sql"))]
fn main() {
    eprintln!("this example needs the `sql` feature of eip-adapters");
}
