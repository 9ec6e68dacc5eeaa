"""What serves profile jobs on a device: the daemon's worker threads and the fleet's
`accelopt worker` process alike."""
