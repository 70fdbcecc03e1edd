"""MessageStoreConfig: RocketMQ's store properties (its MessageStoreConfig) as snake_case fields.

Defaults are RocketMQ 4.x's. ``STORE_PROPERTIES`` maps the fields to their RocketMQ property
names; ``from_properties`` reads a broker's ``.properties`` dict (unknown keys ignored, as
RocketMQ does; the pre-4.5.1 ``mapedFileSize*`` spellings are still read).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from mqtools.common.brokerrole import BrokerRole
from mqtools.common.configkeys import PropertyMap
from mqtools.common.javanum import INT_MAX
from mqtools.common.message import Host
from mqtools.server.store.delay_levels import DEFAULT_DELAY_LEVELS


def _default_root() -> str:
    return str(Path.home() / "store")


@dataclass
class MessageStoreConfig:
    store_path_root_dir: str = field(default_factory=_default_root)
    store_path_commit_log: str = ""
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    flush_disk_type: str = "ASYNC_FLUSH"
    mapped_file_size_commit_log: int = 1073741824
    mapped_file_size_consume_queue: int = 300_000 * 20
    max_message_size: int = 4194304
    check_crc_on_recover: bool = True
    flush_interval_commit_log: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval: int = 10000
    flush_commit_log_timed: bool = True
    sync_flush_timeout: int = 5000
    slave_timeout: int = 3000
    flush_interval_consume_queue: int = 1000
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval: int = 60000
    access_message_in_memory_max_ratio: int = 40
    max_transfer_bytes_on_message_in_memory: int = 262144
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 65536
    max_transfer_count_on_message_in_disk: int = 8
    message_index_enable: bool = True
    message_index_safe: bool = False
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 20_000_000
    max_msgs_num_batch: int = 64
    default_query_max_num: int = 32
    file_reserved_time: int = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    disk_space_warning_level_ratio: int = 90
    disk_space_clean_forcibly_ratio: int = 85
    clean_file_forcibly_enable: bool = True
    clean_resource_interval: int = 10000
    delete_file_batch_max: int = 10
    delete_commit_log_files_interval: int = 100
    os_page_cache_busy_time_out_mills: int = 1000
    offset_check_in_slave: bool = False
    duplication_enable: bool = False
    #: RocketMQ's warmMapedFileEnable: fault the commitlog's pages in before the appends reach them
    #: (here a thread populating a window ahead of the write position, see warmer.py). On by default,
    #: unlike RocketMQ (false), whose warm-up writes zeros over each new file: this one writes
    #: nothing, as flushes sync the written range only (mapped_file.py).
    warm_mapped_file_enable: bool = True
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    # --- timer messages (RIP-43, mqtools/server/store/timer): Apache 5's keys and defaults ---
    timer_wheel_enable: bool = True
    #: Snapped down to 100, 200, 500 or 1000 by the timer, as Apache's setter does.
    timer_precision_ms: int = 1000
    timer_max_delay_sec: int = 3600 * 24 * 3
    timer_roll_window_slot: int = 3600 * 24 * 2
    mapped_file_size_timer_log: int = 100 * 1024 * 1024
    timer_flush_interval_ms: int = 1000
    timer_congest_num_each_slot: int = INT_MAX
    timer_stop_enqueue: bool = False
    timer_stop_dequeue: bool = False
    timer_enable_retry_until_success: bool = False
    # --- end of the timer keys ---
    #: Address written as STOREHOST and used in offset message ids when a put carries none.
    broker_ip1: str = "127.0.0.1"
    listen_port: int = 10911

    def __post_init__(self) -> None:
        self.broker_role = BrokerRole.parse(self.broker_role)
        if not self.store_path_commit_log:
            self.store_path_commit_log = str(Path(self.store_path_root_dir) / "commitlog")

    # ------------------------------------------------------------------ derived paths

    @property
    def root(self) -> Path:
        return Path(self.store_path_root_dir)

    @property
    def commit_log_dir(self) -> Path:
        return Path(self.store_path_commit_log)

    @property
    def consume_queue_dir(self) -> Path:
        return self.root / "consumequeue"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def store_host(self) -> Host:
        return (self.broker_ip1, self.listen_port)

    @property
    def sync_flush(self) -> bool:
        return self.flush_disk_type == "SYNC_FLUSH"

    @property
    def is_slave(self) -> bool:
        return not self.broker_role.is_master

    # ------------------------------------------------------------------ properties files

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> MessageStoreConfig:
        """Build from RocketMQ property names (ConfigError on a bad value); `~` in the root expands."""
        values = STORE_PROPERTIES.parse(props)
        root = values.get("store_path_root_dir")
        if root is not None:
            values["store_path_root_dir"] = os.path.expanduser(root)
        return cls(**values)

    def to_properties(self) -> dict[str, str]:
        return STORE_PROPERTIES.to_properties(self)


STORE_PROPERTIES = PropertyMap(
    MessageStoreConfig,
    overrides={"broker_ip1": "brokerIP1", "check_crc_on_recover": "checkCRCOnRecover",
               "warm_mapped_file_enable": "warmMapedFileEnable"},
    aliases={"mapedFileSizeCommitLog": "mappedFileSizeCommitLog",
             "mapedFileSizeConsumeQueue": "mappedFileSizeConsumeQueue"})
