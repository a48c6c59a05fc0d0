from kafkaref.properties.profiles import load_from_environment

PROFILE = load_from_environment()


def pytest_report_header(config):
    return f"hypothesis profile: {PROFILE} (set HYPOTHESIS_PROFILE=ci|dev|deep)"
