"""`python -m services.capture worker|sampler|archiver|health ...`"""
import sys


def main() -> None:
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "sampler":
        from services.capture.sampler import main as run
        run(sys.argv[2:])
    elif cmd == "archiver":
        from services.capture.archiver import main as run
        run(sys.argv[2:])
    elif cmd == "health":  # the containers' healthcheck: Kafka answers, with this worker's settings
        from schemas.errors import ContractError
        from services.capture.connect import require_reachable
        from services.capture.settings import Settings
        try:
            s = Settings()
            require_reachable(s.bootstrap_servers, s.security, timeout=5.0)
        except ContractError as exc:
            sys.exit(f"ctrlaudit health: {exc}")
        print("ok")
    else:
        from schemas.errors import ContractError
        from services.capture.settings import Settings, ensure_topics
        try:
            settings = Settings()
            _ = settings.role_set, settings.security  # properties that validate (SettingsError)
            ensure_topics(Settings())
        except (ValueError, ContractError) as exc:  # settings (SettingsError), --command-config, Kafka
            sys.exit(f"ctrlaudit capture: {exc}")
        from services.capture.app import main as run_worker
        run_worker()


main()
