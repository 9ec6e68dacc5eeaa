"""The daemon's own process (`accelopt daemon`): the watcher, the searches, the clock, the
portfolio, re-verification, the library folder, and the main loop that supervises them."""
