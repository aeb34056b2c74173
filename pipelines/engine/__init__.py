"""The task-agnostic evaluation engine: specs, identity, snapshots, inputs, evaluate (plan -> predict
-> score through the task's family), generations, costs, release. Names no dataset and no task."""
