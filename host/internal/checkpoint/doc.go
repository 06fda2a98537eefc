// Package checkpoint owns a run's checkpoints: setting them up (fencing a
// crashed predecessor's transaction, rolling back a checkpoint that was
// prepared and not committed, replaying the changelog into the store),
// the metadata the store keeps with each checkpoint, and the order in
// which a checkpoint commits the store, the changelog and the Kafka
// transaction (Coordinator.Commit), so that a crash at any point leaves a
// state a restart recovers from. A standby instance applies the changelog
// the same way (Setup.WarmStandby). A run sharing its consumer group by
// task (tasks.go) restores, writes and keeps standby copies of changelog
// partitions task by task.
package checkpoint
