"""Tools for planting context confusion: look-alikes of each world's tools (another name and
wording for the same job, as happens when two teams or two API versions expose one action), and
unrelated tools from other business areas that pad a catalog to the size asked for.

Written for ctxlab. The look-alikes keep the original's parameters, so a call can go to either.
"""
from __future__ import annotations

from ..conversation import ToolDef
from .base import str_prop, tool

LOOKALIKES: dict[str, tuple[str, str]] = {
    # ecommerce
    "get_order": ("lookup_order_details", "Look up the details of an order by its id: items, totals, status, "
                  "shipping address, carrier and tracking, and how it was paid."),
    "issue_refund": ("create_refund", "Create a refund of an amount back to the payment method used for an "
                     "order. Cannot be undone; large refunds need a supervisor's approval."),
    "track_shipment": ("get_delivery_status", "Delivery status of a package from the carrier: where it is, "
                       "promised and expected delivery dates, and its scan history."),
    "get_payment": ("lookup_payment", "Look up a payment by id: the card or method used, the amount, and "
                    "its authorizations, captures and refunds."),
    # sql
    "generate_sql": ("write_query", "Turn a question about the sales warehouse into one PostgreSQL SELECT "
                     "query; give it the failed query and the validator's error to get a fixed one."),
    "run_sql": ("execute_query", "Execute a read-only SQL query that passed validation and return the "
                "result rows as JSON."),
    "valid_sql": ("check_sql", "Check a SQL statement against the warehouse schema without executing it: "
                  "errors with SQLSTATE codes, warnings and lint results."),
    # travel
    "search_flights": ("find_flights", "Find flight offers from one airport to another on a given date, with "
                       "prices for the travelers, segments, baggage and fare brand."),
    "hold_flight": ("reserve_flight", "Reserve a flight offer for 24 hours without issuing the ticket; "
                    "returns the booking reference."),
    "search_hotels": ("find_hotels", "Find hotels in a city for given dates, with room types, nightly "
                      "prices and guest ratings."),
}
"""Original tool name -> (look-alike name, its description)."""

_FILLERS: tuple[tuple[str, str, str], ...] = (
    ("get_weather_forecast", "weather", "Hourly and daily weather forecast for a city: temperature, rain, wind."),
    ("convert_currency", "finance", "Convert an amount between two currencies at today's exchange rate."),
    ("create_calendar_event", "calendar", "Put a meeting on a calendar with a title, start, end and invitees."),
    ("send_slack_message", "chat", "Post a message to a Slack channel or a direct message to a colleague."),
    ("translate_text", "language", "Translate a text into another language, keeping its formatting."),
    ("get_stock_quote", "markets", "Latest price, day range and volume of a stock ticker."),
    ("create_jira_issue", "engineering", "Open a bug or task in a Jira project with a summary and priority."),
    ("list_github_pull_requests", "engineering", "List the open pull requests of a GitHub repository."),
    ("reset_user_password", "identity", "Send a password reset link to an employee's work email."),
    ("book_meeting_room", "facilities", "Reserve a meeting room in an office building for a time slot."),
    ("submit_expense_report", "finance", "File an expense report with receipts for reimbursement."),
    ("get_employee_directory", "people", "Find a colleague's title, team, manager and phone extension."),
    ("request_time_off", "people", "Ask for vacation or sick days; the manager is notified to approve."),
    ("generate_invoice_pdf", "billing", "Render an invoice for a business customer as a PDF document."),
    ("run_payroll", "people", "Start the monthly payroll run for all salaried employees."),
    ("scan_document_ocr", "documents", "Extract the text of a scanned page or photo with OCR."),
    ("summarize_meeting_notes", "productivity", "Condense a meeting transcript into decisions and action items."),
    ("check_server_health", "operations", "Ping a server and report CPU, memory, disk and uptime."),
    ("restart_kubernetes_pod", "operations", "Restart a pod in a Kubernetes namespace by name."),
    ("query_prometheus_metric", "operations", "Evaluate a PromQL expression over a time range."),
    ("rotate_api_key", "security", "Revoke a service's API key and issue a new one."),
    ("scan_dependencies_cve", "security", "List known vulnerabilities (CVEs) in a project's dependencies."),
    ("get_recipe", "cooking", "A recipe with ingredients and steps for a dish name."),
    ("find_nearby_restaurants", "local", "Restaurants near an address, with cuisine, rating and opening hours."),
    ("get_public_transit_route", "local", "Bus, tram and train connections between two addresses."),
    ("lookup_word_definition", "language", "Dictionary definition, pronunciation and synonyms of a word."),
    ("play_music_track", "media", "Play a song or playlist on the office speakers."),
    ("create_survey", "marketing", "Build a customer survey with multiple-choice and free-text questions."),
    ("schedule_social_post", "marketing", "Schedule a post on the company's social media accounts."),
    ("get_website_analytics", "marketing", "Visitors, page views and bounce rate of the website for a period."),
    ("create_discount_banner", "marketing", "Design a homepage banner announcing a seasonal sale."),
    ("enroll_in_training", "people", "Sign an employee up for an internal training course."),
    ("order_office_supplies", "facilities", "Order paper, pens, toner and other office supplies."),
    ("report_facility_issue", "facilities", "Report a broken light, leak or heating problem in the office."),
    ("get_parking_availability", "facilities", "Free spaces in the company car park right now."),
    ("compute_tax_withholding", "finance", "Estimate income tax withholding for a salary and tax bracket."),
    ("validate_vat_number", "finance", "Check that a European VAT registration number is valid."),
    ("get_exchange_holidays", "markets", "Trading holidays of a stock exchange for a year."),
    ("draft_legal_contract", "legal", "Draft a non-disclosure or services agreement from a template."),
    ("check_trademark", "legal", "Search registered trademarks for a brand name."),
    ("plan_warehouse_picking", "logistics", "Order the picking list of a warehouse shift to shorten walking routes."),
    ("forecast_inventory_demand", "logistics", "Forecast next month's demand for a product from its sales history."),
    ("register_vehicle_service", "fleet", "Book a maintenance appointment for a company vehicle."),
    ("log_fuel_purchase", "fleet", "Record a fuel purchase for a fleet vehicle with liters and price."),
    ("detect_image_objects", "vision", "Detect and label objects in an image with bounding boxes."),
    ("transcribe_audio", "speech", "Transcribe a recorded phone call or voice memo to text."),
    ("text_to_speech", "speech", "Read a text aloud and return an audio file."),
    ("get_news_headlines", "media", "Top news headlines for a country or topic today."),
    ("search_patents", "legal", "Search patent filings by keyword, inventor or assignee."),
    ("calculate_mortgage", "finance", "Monthly payment and total interest of a mortgage."),
    ("get_air_quality", "weather", "Air quality index and pollutant levels for a city."),
    ("track_fitness_activity", "health", "Log a workout with duration, distance and heart rate."),
    ("book_doctor_appointment", "health", "Find and book a general practitioner appointment."),
    ("get_crop_prices", "agriculture", "Market prices of wheat, corn and soybeans today."),
    ("monitor_soil_moisture", "agriculture", "Readings from soil moisture sensors in a field."),
    ("create_git_branch", "engineering", "Create a branch in a Git repository from a base commit."),
    ("deploy_frontend_build", "engineering", "Deploy the latest web frontend build to production."),
    ("get_code_coverage", "engineering", "Test coverage percentage of a repository's main branch."),
    ("archive_email_thread", "email", "Move an email thread out of the inbox into the archive."),
    ("set_out_of_office", "email", "Turn on an automatic out-of-office reply with dates and a message."),
    ("get_sunrise_sunset", "weather", "Sunrise and sunset times for a place and date."),
    ("convert_units", "utility", "Convert a value between units of length, mass or volume."),
    ("generate_qr_code", "utility", "Make a QR code image that encodes a URL or text."),
    ("shorten_url", "utility", "Create a short link that redirects to a long URL."),
    ("check_domain_availability", "web", "Whether an internet domain name is free to register."),
    ("get_sports_scores", "media", "Live scores and results of today's football and basketball games."),
    ("find_volunteer_events", "community", "Local volunteering opportunities for a team outing."),
    ("donate_to_charity", "community", "Make a company donation to a registered charity."),
    ("rate_wine_pairing", "cooking", "Suggest a wine that goes with a dish."),
    ("estimate_solar_output", "energy", "Expected solar panel output for a roof size and location."),
    ("read_smart_meter", "energy", "Electricity consumption of the office from the smart meter."),
    ("book_team_lunch", "facilities", "Order catering for a team lunch with dietary options."),
    ("get_timezone", "utility", "Time zone and current local time of a city."),
    ("queue_print_job", "facilities", "Send a document to an office printer."),
    ("search_stock_photos", "media", "Find licensed stock photos by keyword."),
    ("register_webinar", "marketing", "Sign a contact up for an upcoming webinar."),
)
"""Unrelated tools (name, category, description) from business areas no world touches."""

FILLERS: tuple[ToolDef, ...] = tuple(
    tool(name, description, category, {"query": str_prop("What to look up or do, in plain words.")}, ("query",))
    for name, category, description in _FILLERS)


def lookalike_of(original: ToolDef) -> ToolDef | None:
    """The look-alike of a tool (same parameters, another name and wording), or None."""
    if original.name not in LOOKALIKES:
        return None
    name, description = LOOKALIKES[original.name]
    return ToolDef(name, description, original.parameters, original.category)
