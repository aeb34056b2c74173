"""The task-agnostic evaluation engine: specs, identity, snapshots, inputs, evaluate (resolve -> predict
-> score through the task's family), generations, costs, release (``publish_results``). Names no dataset and no task."""
