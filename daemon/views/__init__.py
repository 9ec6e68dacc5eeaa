"""What people read: the static report (`accelopt report`), the live pages (`accelopt serve`,
`accelopt daemon --http`) and the training data a run leaves (`accelopt export-dataset`). Views
read the log and the store; they import nothing from the coordinator or the workers."""
