//! The model's receiving side: what a consumer must be handed, settling, purging, the
//! counters, and the final accounting.

use super::*;

impl Model {
    /// The consumer of subscription `s` takes what is next; returns whether it got something.
    pub(super) fn recv(&mut self, s: usize) -> Result<bool, TestCaseError> {
        let in_flight_before = self.channel.stats().in_flight;
        let sub = &mut self.subs[s];
        let Some(consumer) = sub.consumer.as_mut() else {
            return Ok(false);
        };
        let got = consumer.receiver().try_recv();
        if !sub.open {
            prop_assert!(
                matches!(got, Err(TryRecvError::Closed)),
                "an unsubscribed consumer got {:?}",
                got
            );
            for seq in consumer.buffer.drain(..) {
                end(&mut self.fates, s, seq, DELETED)?;
            }
            return Ok(false);
        }
        let delivery = match got {
            Ok(delivery) => delivery,
            Err(e) => {
                prop_assert_eq!(e, TryRecvError::Empty);
                prop_assert!(
                    consumer.buffer.is_empty() && sub.waiting.is_empty(),
                    "subscription {} says empty with {:?} prefetched and {:?} waiting",
                    s,
                    consumer.buffer,
                    sub.waiting
                );
                return Ok(false);
            }
        };
        let id = delivery.message().id();
        let Some(&seq) = self.seqs.get(&id) else {
            return Err(TestCaseError::fail("a message nobody published"));
        };
        if consumer.buffer.is_empty() {
            // It took a batch (its prefetch at most); what it took is in flight now.
            let taken = self.channel.stats().in_flight - in_flight_before;
            let most = consumer.prefetch.min(sub.waiting.len());
            prop_assert!(
                (1..=most).contains(&taken),
                "took {} with prefetch {} and {} waiting",
                taken,
                consumer.prefetch,
                sub.waiting.len()
            );
            consumer.buffer.extend(sub.waiting.drain(..taken));
        }
        prop_assert_eq!(
            consumer.buffer.pop_front(),
            Some(seq),
            "subscription {} handed out the wrong message",
            s
        );
        let deliveries = sub.deliveries.entry(seq).or_default();
        *deliveries += 1;
        let requeues = sub.requeues.get(&seq).copied().unwrap_or(0);
        prop_assert_eq!(
            *deliveries,
            requeues + 1,
            "delivered again without a nack or a drop"
        );
        prop_assert_eq!(delivery.message().redelivery_count().unwrap(), requeues);
        if requeues == 0 {
            let order = self.messages[seq].order;
            prop_assert!(
                order > sub.last_first,
                "first deliveries out of publish order"
            );
            sub.last_first = order;
        }
        sub.in_flight += 1;
        self.held.push(Held {
            sub: s,
            seq,
            delivery,
        });
        Ok(true)
    }

    pub(super) async fn settle(&mut self, op: Op, index: usize) -> Result<(), TestCaseError> {
        if self.held.is_empty() {
            return Ok(());
        }
        let len = self.held.len();
        let Held {
            sub: s,
            seq,
            delivery,
        } = self.held.swap_remove(index % len);
        let sub = &mut self.subs[s];
        sub.in_flight -= 1;
        let fate = match op {
            Op::Ack(_) => {
                delivery.ack();
                Fate::Acked
            }
            Op::Reject(_) => {
                delivery.reject("refused").await;
                Fate::Dead(DeathReason::Rejected)
            }
            _ => {
                if matches!(op, Op::Nack(_)) {
                    delivery.nack();
                } else {
                    drop(delivery);
                }
                if sub.open {
                    // Back to the head of its subscription.
                    sub.waiting.push_front(seq);
                    *sub.requeues.entry(seq).or_default() += 1;
                    return Ok(());
                }
                DELETED
            }
        };
        end(&mut self.fates, s, seq, fate)
    }

    pub(super) fn purge(&mut self, selector: Option<Selector>) -> Result<(), TestCaseError> {
        let tagged_only = selector.is_some();
        let purged = match &selector {
            Some(selector) => ChannelPurger::purge_matching(&self.channel, selector),
            None => ChannelPurger::purge(&self.channel),
        };
        let mut expected = 0;
        for (s, sub) in self.subs.iter_mut().enumerate().filter(|(_, s)| s.open) {
            let (gone, kept) = sub
                .waiting
                .drain(..)
                .partition(|&seq| !tagged_only || self.messages[seq].tag);
            sub.waiting = kept;
            for seq in Vec::from(gone) {
                expected += 1;
                end(&mut self.fates, s, seq, Fate::Purged)?;
            }
        }
        prop_assert_eq!(purged, expected, "a purge removes what is waiting");
        Ok(())
    }

    pub(super) fn check_stats(&self) -> Result<(), TestCaseError> {
        let stats = self.channel.stats();
        let depth: usize = self.open().map(|s| s.waiting.len()).sum();
        let in_flight: usize = self.open().map(|s| s.holds() - s.waiting.len()).sum();
        let accepted: usize = self.open().map(|s| s.given.len()).sum();
        prop_assert_eq!(
            (stats.depth, stats.in_flight, stats.accepted),
            (depth, in_flight, accepted as u64),
            "(depth, in flight, accepted)"
        );
        prop_assert_eq!(self.channel.subscriber_count(), self.open().count());
        let mut names: Vec<&str> = self
            .open()
            .filter_map(|s| s.durable.map(|n| NAMES[n]))
            .collect();
        names.sort();
        prop_assert_eq!(self.channel.durable_subscriptions(), names);
        Ok(())
    }

    /// Cancels what waits, settles what is held, drains every subscription, ends them all; then
    /// every message stored for a subscription must have ended once, the dead letters matching.
    pub(super) async fn finish(mut self) -> Result<(), TestCaseError> {
        // A publish still waiting is cancelled: it must have stored nothing.
        self.publishes.clear();
        self.not_ready = None;
        while !self.held.is_empty() {
            self.settle(Op::Ack(0), 0).await?;
        }
        for s in 0..self.subs.len() {
            if !self.subs[s].open {
                self.detach(s)?;
                continue;
            }
            if let (Some(name), None) = (self.subs[s].durable, &self.subs[s].consumer) {
                self.attach(name, None)?;
            }
            while self.recv(s)? {
                self.settle(Op::Ack(0), self.held.len() - 1).await?;
            }
        }
        self.check_stats()?;
        let stats = self.channel.stats();
        prop_assert_eq!((stats.depth, stats.in_flight), (0, 0));
        for (name, s) in NAMES.iter().zip(&mut self.durable) {
            if let Some(s) = s.take() {
                let left = self.channel.unsubscribe(name).await;
                prop_assert_eq!(left, Some(0), "subscription {} was drained", s);
                self.subs[s].open = false;
            }
        }
        for s in 0..self.subs.len() {
            self.detach(s)?;
        }
        prop_assert_eq!(self.channel.subscriber_count(), 0);

        let mut expected: HashMap<(MessageId, DeathReason), usize> = HashMap::new();
        for (&(_, seq), fate) in &self.fates {
            if let Fate::Dead(reason) = fate {
                *expected
                    .entry((self.messages[seq].id, *reason))
                    .or_default() += 1;
            }
        }
        let mut dead: HashMap<(MessageId, DeathReason), usize> = HashMap::new();
        let mut dl = self.dead.receiver();
        while let Ok(d) = dl.try_recv() {
            let death = d.message().death().unwrap().unwrap();
            prop_assert_eq!(death.channel.as_str(), CHANNEL);
            *dead.entry((d.message().id(), death.reason)).or_default() += 1;
            d.ack();
        }
        prop_assert_eq!(dead, expected, "the dead letters");
        for (s, sub) in self.subs.iter().enumerate() {
            for &seq in &sub.given {
                prop_assert!(
                    self.fates.contains_key(&(s, seq)),
                    "message {} stored for subscription {} never ended",
                    seq,
                    s
                );
            }
        }
        let given: usize = self.subs.iter().map(|s| s.given.len()).sum();
        prop_assert_eq!(self.fates.len(), given, "nothing ended that was not stored");
        Ok(())
    }
}
