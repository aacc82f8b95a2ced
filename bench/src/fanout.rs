//! Await several futures at once, in place, without spawning tasks: the raw floor's
//! parallel fan-out to N masters.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Every future's output, in order.
pub async fn join_all<F: Future>(mut futures: Vec<F>) -> Vec<F::Output> {
    if futures.len() == 1 {
        // One node: await it as is, as a single-node client would.
        let only = futures.pop().expect("one future");
        return vec![only.await];
    }
    let mut pending: Vec<Option<Pin<Box<F>>>> =
        futures.into_iter().map(|f| Some(Box::pin(f))).collect();
    let mut outputs: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut done = true;
        for (slot, out) in pending.iter_mut().zip(outputs.iter_mut()) {
            if let Some(fut) = slot {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => {
                        *out = Some(v);
                        *slot = None;
                    }
                    Poll::Pending => done = false,
                }
            }
        }
        if done {
            Poll::Ready(
                outputs
                    .iter_mut()
                    .map(|o| o.take().expect("ready"))
                    .collect(),
            )
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn all_outputs_in_order() {
        let futs = (0..4u64)
            .map(|i| async move {
                tokio::time::sleep(std::time::Duration::from_millis(4 - i)).await;
                i
            })
            .collect();
        assert_eq!(join_all(futs).await, vec![0, 1, 2, 3]);
    }
}
