"""What people read: the static report (`accelopt report`) and the live pages (`accelopt serve`,
`accelopt daemon --http`). Views read the log and the store; they import nothing from the
coordinator or the workers."""
