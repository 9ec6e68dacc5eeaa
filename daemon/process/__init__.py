"""What every long-lived accelopt process needs: its log lines, its signals, systemd's notify
protocol and the C allocator's settings (the daemon and `accelopt worker` alike)."""
